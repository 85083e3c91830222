import type { Knex } from 'knex';
import { isUniqueViolation } from './dialect.js';
import { adoptMessages } from './deliveries/adopt.js';
import { dropDeliveries, ofUnregisteredGroup } from './deliveries/complete.js';
import { lockedManager, type ManagerGuard } from './managed-rows.js';
import { retryTransaction } from './retry.js';
import { bumpCatalogRevision } from './settings.js';

export interface ConsumerGroupRow {
  topic: string;
  consumer_group: string;
}

export async function getConsumerGroup(db: Knex, topic: string, group: string): Promise<{ managed_by: string } | null> {
  const row = await db('consumer_groups').where({ topic, consumer_group: group }).first('managed_by');
  return row ? { managed_by: String(row.managed_by ?? '') } : null;
}

export async function listAllConsumerGroups(db: Knex): Promise<ConsumerGroupRow[]> {
  const rows = await db('consumer_groups').select('topic', 'consumer_group').orderBy(['topic', 'consumer_group']);
  return rows.map((r: Record<string, unknown>) => ({ topic: String(r.topic), consumer_group: String(r.consumer_group) }));
}

export async function listConsumerGroups(db: Knex, topic: string): Promise<string[]> {
  return (await db('consumer_groups').where({ topic }).orderBy('consumer_group').pluck('consumer_group')).map(String);
}

export async function isConsumerGroupRegistered(db: Knex, topic: string, group: string): Promise<boolean> {
  return (await db('consumer_groups').where({ topic, consumer_group: group }).first('topic')) !== undefined;
}

/**
 * Registers a group and, in the same transaction, gives it a pending delivery of every message of the topic
 * that no group has started yet, plus any message a plain consumer holds when the topic turns
 * fan-out, so nothing in flight is stranded. False when the group already exists.
 * Retried whole. A re-run after a lost commit answer that runs into the group's row (unique violation) finds
 * its own registration when the row carries this call's manager and time: that is success, not "exists".
 */
export async function registerConsumerGroup(db: Knex, topic: string, group: string, now: number, managedBy = ''): Promise<boolean> {
  const row = { topic, consumer_group: group, managed_by: managedBy, created_at: now };
  try {
    await retryTransaction(db, async (trx, attempt) => {
      try {
        await trx('consumer_groups').insert(row);
      } catch (err) {
        if (attempt.uncertain && isUniqueViolation(err) && (await isOwnRow(trx, row))) return;
        throw err;
      }
      await adoptMessages(trx, topic, group);
      await bumpCatalogRevision(trx);
    });
  } catch (err) {
    if (isUniqueViolation(err)) return false;
    throw err;
  }
  // An enqueue that read the group list just before this commit may have stored a message without this
  // group; a second adoption right after the commit closes that window. INSERT IGNORE: a re-run adds nothing twice.
  await retryTransaction(db, (trx) => adoptMessages(trx, topic, group));
  return true;
}

async function isOwnRow(trx: Knex.Transaction, row: { topic: string; consumer_group: string; managed_by: string; created_at: number }): Promise<boolean> {
  const found = await trx('consumer_groups').where({ topic: row.topic, consumer_group: row.consumer_group }).first('managed_by', 'created_at');
  return found !== undefined && String(found.managed_by ?? '') === row.managed_by && Number(found.created_at) === row.created_at;
}

/**
 * Unregisters a group: its deliveries go, and messages that no remaining group still needs are completed
 * (archived when some group acked them and the topic is replayable, then removed). False when unknown.
 * Retried; a re-run after a lost commit answer that finds the group gone answers what the lost attempt
 * found (it removed it), and the clean-up after it is idempotent (deletes and completions of what is left).
 */
export async function unregisterConsumerGroup(db: Knex, topic: string, group: string, replayable: boolean, now: number, guard: ManagerGuard): Promise<boolean> {
  let removedEarlier = false;
  const removed = await retryTransaction(db, async (trx, attempt) => {
    const manager = await lockedManager(trx, 'consumer_groups', { topic, consumer_group: group });
    if (manager === undefined && attempt.uncertain && removedEarlier) return true;
    guard(manager);
    const deleted = await trx('consumer_groups').where({ topic, consumer_group: group }).delete();
    // The group's ordering-key lines go with it.
    await trx('ordering_heads').where({ topic, consumer_group: group }).delete();
    if (deleted > 0) await bumpCatalogRevision(trx);
    removedEarlier = deleted > 0;
    return deleted > 0;
  });
  if (!removed) return false;
  await dropDeliveries(db, topic, ofUnregisteredGroup(db, topic, group), replayable, now);
  return true;
}
