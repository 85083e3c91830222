import type { Knex } from 'knex';

const isMysql = (db: Knex) => String(db.client.config.client).startsWith('mysql');

/**
 * SQLite plans without statistics unless told: it takes an equality on an index's first column to match about
 * ten rows. So for `deliveries` by message id and status (`message_id IN (...) AND status = 'pending'`: a
 * group's heads opened by an ack, a give-back, a keyed upsert on a fan-out topic, a purge), it preferred
 * `deliveries_expiry (status, expires_at)` to the primary key and read every delivery in that status, of every
 * topic and group: 5 ms per statement with 40,000 pending, a third of an ordered group drain's database time.
 *
 * SQLite's documented remedy is a row in `sqlite_stat1` saying what an index's columns select: here, that a
 * status matches half the table, a status and an expiry time a couple of rows. Every statement by message id
 * then takes the primary key; the TTL reaper's `status = 'pending' AND expires_at <= ?` still takes this
 * index, its only one. The other indexes keep SQLite's defaults. `ANALYZE` (or `PRAGMA optimize`) run by hand
 * replaces the row with measured figures, which say the same of a table with deliveries in it.
 * MySQL/MariaDB measure their indexes themselves (index dives) and take the primary key there already.
 */
export async function up(db: Knex): Promise<void> {
  if (isMysql(db)) return;
  // Creates sqlite_stat1 where it is missing (it cannot be created otherwise) and analyses no table.
  await db.raw('ANALYZE sqlite_schema');
  await db.raw("DELETE FROM sqlite_stat1 WHERE tbl = 'deliveries' AND idx = 'deliveries_expiry'");
  await db.raw("INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES ('deliveries', 'deliveries_expiry', '1000000 500000 2')");
  // Loads the row into this connection's planner; other connections load it with the schema they read next.
  await db.raw('ANALYZE sqlite_schema');
}

export async function down(db: Knex): Promise<void> {
  if (isMysql(db)) return;
  await db.raw("DELETE FROM sqlite_stat1 WHERE tbl = 'deliveries' AND idx = 'deliveries_expiry'");
}
