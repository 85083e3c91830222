import type { Knex } from 'knex';
import type { Logger } from '../log/logger.js';
import { capabilities } from './capabilities.js';

/** The database's clock in epoch milliseconds, as an SQL expression; UTC, whatever the session's time zone. */
export function dbNow(db: Knex): string {
  return capabilities(db).dialect === 'mysql'
    ? "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000)"
    : "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)";
}

/** Samples per measurement: the one with the shortest round trip counts (its error is at most half of it). */
const SAMPLES = 5;
/** How often the offset is measured again, so drift and a stepped clock on either side are followed. */
const CLOCK_REFRESH_MS = 60_000;
/** An offset (or a change of it) this large is logged at warn: some clock is wrong, and an operator should know. */
const NOTABLE_OFFSET_MS = 1_000;

export interface Clock {
  /** Epoch milliseconds in the database's clock. */
  readonly now: () => number;
  /** The database's clock minus this instance's (Date.now()), as last measured. */
  offsetMs(): number;
  stop(): void;
}

interface Reading {
  /** The database's time, epoch ms, at `mark`. */
  dbMs: number;
  /** performance.now() half-way through the round trip that read it. */
  mark: number;
  roundTripMs: number;
}

async function read(db: Knex): Promise<Reading> {
  const sent = performance.now();
  const [rows] = (await db.raw(`SELECT ${dbNow(db)} AS t`)) as [Array<{ t: number | string }>];
  const received = performance.now();
  const dbMs = Number(rows[0]?.t);
  if (!Number.isFinite(dbMs)) throw new Error(`the database answered ${JSON.stringify(rows[0]?.t)} for its clock`);
  return { dbMs, mark: (sent + received) / 2, roundTripMs: received - sent };
}

async function measure(db: Knex): Promise<Reading> {
  let best: Reading | undefined;
  for (let i = 0; i < SAMPLES; i++) {
    const reading = await read(db);
    if (!best || reading.roundTripMs < best.roundTripMs) best = reading;
  }
  return best!;
}

/**
 * The clock every instance stamps and compares message times in: when a claim's visibility ends, when a
 * message expires, `created_at`, the throughput limit's refill, token lifetimes, the login limit's window.
 * Instances on one MySQL database take it from the database, so instances whose own clocks disagree (no
 * NTP, a VM resumed from a snapshot) still agree with each other: one whose clock ran ahead would otherwise
 * redeliver the others' claims early and expire their messages early.
 *
 * `now()` runs no query: it is this process's monotonic clock plus an offset to the database's, measured at
 * start and every minute (the sample of 5 with the shortest round trip; its error is at most half that round
 * trip, under a millisecond on a local network). The monotonic clock does not step when the machine's wall
 * clock is set, so stepping the instance's clock changes nothing; stepping the database's is followed
 * within a minute. SQLite is in this process, so its clock is this one: Date.now() with no offset.
 */
export async function startDatabaseClock(db: Knex, logger: Logger): Promise<Clock> {
  if (capabilities(db).inProcess) return { now: Date.now, offsetMs: () => 0, stop: () => undefined };
  let reading = await measure(db);
  const now = () => Math.floor(reading.dbMs + (performance.now() - reading.mark));
  const offsetMs = () => now() - Date.now();
  let reported = 0;
  const report = () => {
    const offset = offsetMs();
    if (Math.abs(offset - reported) < NOTABLE_OFFSET_MS) return;
    reported = offset;
    if (Math.abs(offset) < NOTABLE_OFFSET_MS) return logger.info({ clockOffsetMs: offset }, "this instance's clock agrees with the database's again");
    const side = offset > 0 ? 'behind' : 'ahead of';
    logger.warn({ clockOffsetMs: offset }, `this instance's clock is ${Math.abs(offset)} ms ${side} the database's; message times follow the database's clock`);
  };
  report();
  const timer = setInterval(() => {
    measure(db).then(
      (fresh) => {
        reading = fresh;
        report();
      },
      // The database is away: the last offset stays good for far longer than an outage lasts.
      (err: unknown) => logger.debug({ err }, 'could not read the database clock; keeping the last offset'),
    );
  }, CLOCK_REFRESH_MS);
  timer.unref();
  return { now, offsetMs, stop: () => clearInterval(timer) };
}
