import type { Knex } from 'knex';
import { capabilities } from '../capabilities.js';
import { retryTransaction } from '../retry.js';
import { getSetting, putSetting } from '../settings.js';
import { dropDeliveries, ofUnregisteredGroup } from './complete.js';
import { adoptMessages } from './adopt.js';

/**
 * How long after a group's registration its topic is searched for messages stored without the group. An
 * enqueue transaction that read the topic's groups before the registration committed, and committed after
 * both of the registration's adoptions, stored its message without a delivery of that group (without any
 * delivery, when the topic had no group before); such a transaction is one open across the registration, so an
 * hour is many times longer than one lasts (a statement waiting for a row lock gives up after
 * `innodb_lock_wait_timeout`, 50 s by default).
 */
export const STRANDED_WINDOW_MS = 3_600_000;

/** The `settings` row holding when the last adoption pass over recent registrations completed. */
const LAST_ADOPTION = 'stranded_adoption_at';

/** What a repair did: deliveries stored per topic, and messages finished by dropping an unregistered group's. */
export interface StrandedRepair {
  adopted: Map<string, number>;
  dropped: number;
}

/**
 * Repairs what an enqueue racing a consumer group's registration or unregistration, or a process that died
 * in the middle of an unregistration, left behind, as part of the expiry reaper's run.
 * - MySQL/MariaDB only (on SQLite every write transaction holds the database's write lock from its start, so
 *   an enqueue and a registration never overlap): each group registered since STRANDED_WINDOW_MS before the
 *   previous repair's adoption pass (before now, the first time) adopts its topic's messages again, as its
 *   registration did (adoptMessages): every pending message, which no group has claimed yet, so every
 *   registered group must have a delivery of it. Deliveries it has already are left as they are.
 * - Deliveries of a group that is no longer registered (an enqueue that read the group before its
 *   unregistration committed, and committed after the unregistration dropped the group's deliveries; an
 *   adoption above that read the group just before it went; on either engine, an unregistration whose
 *   process died after removing the group and before dropping all its deliveries, which run in batches after
 *   it): dropped, and their messages finished when no group still works on them, as the unregistration does.
 *   Until then such a message could never be redelivered nor expire.
 */
export async function repairStranded(db: Knex, now: number, replayable: (topic: string) => boolean, signal?: AbortSignal): Promise<StrandedRepair> {
  const adopted = new Map<string, number>();
  if (!capabilities(db).singleWriter) {
    // Registered within the window before the last completed adoption pass, too: runs an hour or more apart
    // (a long interval, an hourly CronJob, a database away for a while) must not skip a registration.
    const last = Number((await getSetting(db, LAST_ADOPTION)) ?? now);
    const since = Math.min(now, Number.isFinite(last) ? last : now) - STRANDED_WINDOW_MS;
    const recent: Array<{ topic: string; consumer_group: string }> = await db('consumer_groups').select('topic', 'consumer_group').where('created_at', '>=', since);
    for (const { topic, consumer_group: group } of recent) {
      signal?.throwIfAborted();
      const count = await retryTransaction(db, (trx) => adoptMessages(trx, String(topic), String(group)));
      if (count > 0) adopted.set(String(topic), (adopted.get(String(topic)) ?? 0) + count);
    }
    await putSetting(db, LAST_ADOPTION, String(now));
  }
  let dropped = 0;
  for (const { topic, group } of await unregisteredDeliveries(db)) {
    signal?.throwIfAborted();
    const finished = await dropDeliveries(db, topic, ofUnregisteredGroup(db, topic, group), replayable(topic), now);
    dropped += finished.removed + finished.expired;
  }
  return { adopted, dropped };
}

/** The (topic, group) pairs that have deliveries but no registration: one loose scan of index deliveries_claim. */
async function unregisteredDeliveries(db: Knex): Promise<Array<{ topic: string; group: string }>> {
  const pairs = await db('deliveries').select('topic', 'consumer_group').groupBy('topic', 'consumer_group');
  if (pairs.length === 0) return [];
  const registered = new Set((await db('consumer_groups').select('topic', 'consumer_group')).map((r: { topic: string; consumer_group: string }) => `${r.topic}\n${r.consumer_group}`));
  return pairs
    .map((r: { topic: string; consumer_group: string }) => ({ topic: String(r.topic), group: String(r.consumer_group) }))
    .filter((p) => !registered.has(`${p.topic}\n${p.group}`));
}
