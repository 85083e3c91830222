import type { Knex } from 'knex';

const isMysql = (db: Knex) => String(db.client.config.client).startsWith('mysql');

/**
 * Named leases shared by every instance (src/store/leases.ts): the reapers' and the migrations' mutual
 * exclusion. They replace MySQL's GET_LOCK, which is local to one node of a Galera cluster (two instances on
 * two nodes both got it), and SQLite's lease rows in `settings`. `token` rises on every acquisition (a fencing
 * token); `expires_at` is in the database's clock, epoch milliseconds.
 *
 * The migration lock itself is a lease, so this table must exist before knex's migrations run: src/store/db.ts
 * calls createLeasesTable first (IF NOT EXISTS, so pods racing on an empty database all succeed), and this
 * migration only records it. InnoDB and a primary key: what Galera replicates.
 */
export async function createLeasesTable(db: Knex): Promise<void> {
  if (isMysql(db)) {
    await db.raw(
      'CREATE TABLE IF NOT EXISTS leases (' +
        'name VARCHAR(100) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, ' +
        "holder VARCHAR(100) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', " +
        'token BIGINT NOT NULL DEFAULT 0, ' +
        'expires_at BIGINT NOT NULL DEFAULT 0, ' +
        'PRIMARY KEY (name)' +
        ') ENGINE=InnoDB',
    );
    return;
  }
  await db.raw(
    "CREATE TABLE IF NOT EXISTS leases (name TEXT NOT NULL PRIMARY KEY, holder TEXT NOT NULL DEFAULT '', token INTEGER NOT NULL DEFAULT 0, expires_at INTEGER NOT NULL DEFAULT 0)",
  );
}

export async function up(db: Knex): Promise<void> {
  await createLeasesTable(db);
  // SQLite's former reaper leases (`lease:reaper:<kind>` rows); a lease held right now lapses with the upgrade.
  await db('settings').where('name', 'like', 'lease:%').delete();
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('leases');
}
