import fc from 'fast-check';
import type { Knex } from 'knex';
import { expect } from 'vitest';
import type { Api } from './http.js';

/**
 * Shared machinery of the fuzz suites (test/fuzz-http.test.ts, test/fuzz-grpc.test.ts): a seeded fast-check
 * run whose failure names the seed and the case, a change counter on every table a request may write, and a
 * set of guarded messages no fuzz request may touch.
 */

/** The seed of every run unless FUZZ_SEED says otherwise (a fixed default: CI runs are reproducible). */
export const DEFAULT_FUZZ_SEED = 20261123;

export interface FuzzSettings {
  seed: number;
  numRuns: number;
  /** FUZZ_PATH: replay one case of the seed's run (fast-check's counterexample path) instead of the whole run. */
  path?: string;
}

export function fuzzSettings(defaultRuns: number): FuzzSettings {
  const seed = process.env.FUZZ_SEED === undefined || process.env.FUZZ_SEED === '' ? DEFAULT_FUZZ_SEED : Number(process.env.FUZZ_SEED);
  const numRuns = process.env.FUZZ_RUNS === undefined || process.env.FUZZ_RUNS === '' ? defaultRuns : Number(process.env.FUZZ_RUNS);
  if (!Number.isSafeInteger(seed)) throw new Error(`FUZZ_SEED must be an integer, got ${process.env.FUZZ_SEED}`);
  if (!Number.isSafeInteger(numRuns) || numRuns < 1) throw new Error(`FUZZ_RUNS must be a positive integer, got ${process.env.FUZZ_RUNS}`);
  return { seed, numRuns, path: process.env.FUZZ_PATH || undefined };
}

/**
 * Runs the property; on failure throws one error that vitest prints in full: the seed, the replay path, the
 * (shrunk) failing case, what went wrong, and the command that reproduces it.
 */
export async function runFuzz<T>(name: string, property: fc.IAsyncPropertyWithHooks<T>, settings: FuzzSettings, testFile: string): Promise<fc.RunDetails<T>> {
  const details = await fc.check(property, { seed: settings.seed, numRuns: settings.numRuns, path: settings.path });
  if (details.failed) {
    const report = fc.defaultReportMessage(details) ?? 'property failed';
    const cause = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
    throw new Error(
      `${name}: fuzz case failed (seed ${details.seed}, path "${details.counterexamplePath}")\n` +
        `reproduce: FUZZ_SEED=${details.seed} FUZZ_RUNS=${settings.numRuns} npx vitest run ${testFile}\n` +
        `(only the failing case, without the cases before it: FUZZ_SEED=${details.seed} FUZZ_PATH=${details.counterexamplePath} npx vitest run ${testFile})\n\n` +
        `what went wrong (shrunk case): ${cause}\n\n${report}`,
    );
  }
  return details;
}

/** Every table a request may write; a rejected request must leave all of them as they were. */
const WATCHED_TABLES = ['messages', 'deliveries', 'message_log', 'topic_configs', 'topic_schemas', 'consumer_groups', 'users', 'grants'];

/**
 * Counts every row inserted, updated or deleted in the watched tables (triggers into `fuzz_changes`, one
 * counter per table and event), so a test can tell, with one read, that a request changed nothing, and what
 * it changed when it did. The result is like `{"messages insert": 3}`.
 */
export async function installChangeCounter(db: Knex): Promise<() => Promise<Record<string, number>>> {
  const mysql = db.client.config.client === 'mysql2';
  await db.raw('CREATE TABLE fuzz_changes (what VARCHAR(64) NOT NULL PRIMARY KEY, n BIGINT NOT NULL)');
  for (const table of WATCHED_TABLES) {
    for (const event of ['INSERT', 'UPDATE', 'DELETE']) {
      const what = `${table} ${event.toLowerCase()}`;
      await db('fuzz_changes').insert({ what, n: 0 });
      const name = `fuzz_${table}_${event.toLowerCase()}`;
      const bump = `UPDATE fuzz_changes SET n = n + 1 WHERE what = '${what}'`;
      await db.raw(mysql ? `CREATE TRIGGER ${name} AFTER ${event} ON ${table} FOR EACH ROW ${bump}` : `CREATE TRIGGER ${name} AFTER ${event} ON ${table} BEGIN ${bump}; END`);
    }
  }
  return async () => Object.fromEntries((await db('fuzz_changes').where('n', '>', 0).select('what', 'n')).map((r: { what: string; n: unknown }) => [r.what, Number(r.n)]));
}

/** What changed between two readings of the change counter, e.g. "messages update +1"; empty when nothing. */
export function changedBetween(before: Record<string, number>, after: Record<string, number>): string {
  return Object.entries(after)
    .filter(([what, n]) => n !== (before[what] ?? 0))
    .map(([what, n]) => `${what} +${n - (before[what] ?? 0)}`)
    .join(', ');
}

/** Guarded topics all start with this; fuzz generators never produce a name that does (any case). */
export const GUARD_PREFIX = 'guard';
export const isGuardedName = (name: string) => name.toLowerCase().startsWith(GUARD_PREFIX);
/** A generated topic or group name, moved out of the guarded namespace when it fell into it. */
export const unguarded = (name: string) => (isGuardedName(name) ? `x${name}` : name);

export interface Guarded {
  /** Ids of every guarded message (lower case), which no generated id may equal. */
  ids: Set<string>;
  /** The guarded rows of every watched table, as they were set up. */
  snapshot: unknown;
}

/**
 * Known messages in every state a fuzz request could damage: pending (plain, keyed, with metadata), processing
 * (held for 12 hours), a dead letter, an archived (acked, replayable) entry, a fan-out topic with two groups
 * (one delivery processing), a topic with a schema, and their configurations and groups.
 */
export async function setUpGuarded(api: Api, db: Knex): Promise<Guarded> {
  const ok = async (res: Promise<{ status: number; text: string; body: any }>, status: number) => {
    const r = await res;
    expect(r.status, r.text).toBe(status);
    return r.body;
  };
  await ok(api.enqueue('guard-plain', 'p1'), 201);
  await ok(api.enqueue('guard-plain', 'p2', { key: 'gk' }), 201);
  await ok(api.enqueue('guard-plain', '{"p":3}', { metadata: { a: 'b' }, key: 'gk2' }), 201);

  await ok(api.put('/api/topic-configs/guard-conf', { max_retries: 1, max_depth: 100, replayable: true, throughput_limit: 1000 }), 200);
  for (const p of ['c1', 'c2', 'c3', 'c4']) await ok(api.enqueue('guard-conf', p), 201);
  const [toAck, toNack, toHold] = (await ok(api.dequeue('guard-conf', { count: 3, visibility_timeout_seconds: 43_200 }), 200)).messages.map((m: any) => m.id);
  await ok(api.post(`/api/messages/${toAck}/ack`), 204);
  await ok(api.post(`/api/messages/${toNack}/nack`, { error: 'guarded failure' }), 204);
  expect(toHold).toBeDefined();

  await ok(api.post('/api/topics/guard-fan/consumer-groups', { consumer_group: 'g1' }), 201);
  await ok(api.post('/api/topics/guard-fan/consumer-groups', { consumer_group: 'g2' }), 201);
  await ok(api.enqueue('guard-fan', 'f1', { key: 'fk' }), 201);
  await ok(api.enqueue('guard-fan', 'f2'), 201);
  await ok(api.dequeue('guard-fan', { consumer_group: 'g1', visibility_timeout_seconds: 43_200 }), 200);

  await ok(api.put('/api/topic-schemas/guard-schema', { schema_json: '{"type":"record","name":"G","fields":[{"name":"n","type":"int"}]}' }), 200);
  await ok(api.enqueue('guard-schema', '{"n":1}'), 201);

  const snapshot = await guardedRows(db);
  const ids = new Set<string>((await db('messages').where('topic', 'like', `${GUARD_PREFIX}%`).select('id')).map((r: { id: string }) => r.id.toLowerCase()));
  expect(ids.size).toBe(9);
  return { ids, snapshot };
}

/** The guarded rows of every watched table (payloads as base64), in a stable order. */
export async function guardedRows(db: Knex): Promise<unknown> {
  const plain = (rows: Array<Record<string, unknown>>) =>
    rows.map((row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, Buffer.isBuffer(v) ? v.toString('base64') : typeof v === 'bigint' ? String(v) : v])));
  const like = `${GUARD_PREFIX}%`;
  return {
    messages: plain(await db('messages').where('topic', 'like', like).orderBy('id')),
    deliveries: plain(await db('deliveries').where('topic', 'like', like).orderBy(['message_id', 'consumer_group'])),
    message_log: plain(await db('message_log').where('topic', 'like', like).orderBy('id')),
    topic_configs: plain(await db('topic_configs').where('topic', 'like', like).orderBy('topic')),
    topic_schemas: plain(await db('topic_schemas').where('topic', 'like', like).orderBy('topic')),
    consumer_groups: plain(await db('consumer_groups').where('topic', 'like', like).orderBy(['topic', 'consumer_group'])),
  };
}

/** A UUID that names no guarded message. */
export const unguardedId = (guarded: Guarded, id: string) => (guarded.ids.has(id.toLowerCase()) ? '0190a0a0-0000-7000-8000-00000000f00d' : id);
