import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../src/log/logger.js';
import type { DeleteSchedule } from '../src/reapers/delete-schedule.js';
import type { ReaperKind, Reapers } from '../src/reapers/reapers.js';
import { ReaperScheduler } from '../src/reapers/scheduler.js';

/**
 * When the interval reapers run after start-up, over hours of (fake) time. The reapers themselves are a
 * recorder here: what a run does is covered by test/reapers.test.ts against real databases; this is only the
 * timetable, which real time cannot reach in a test.
 */
describe('reaper schedule after start-up', () => {
  let runs: Array<{ kind: ReaperKind; at: number }>;
  let scheduler: ReaperScheduler;
  beforeEach(() => {
    vi.useFakeTimers({ now: 0 });
    runs = [];
  });
  afterEach(async () => {
    await scheduler?.stop();
    vi.useRealTimers();
  });

  async function start(expiryIntervalSeconds: number, archiveIntervalSeconds: number): Promise<void> {
    const reapers = { run: async (kind: ReaperKind) => (runs.push({ kind, at: Date.now() }), { count: 0 }) } as unknown as Reapers;
    const schedule = { effective: async () => '' } as unknown as DeleteSchedule;
    scheduler = new ReaperScheduler({ reapers, schedule, logger: createLogger('silent'), expiryIntervalSeconds, archiveIntervalSeconds });
    await scheduler.start();
  }

  const times = (kind: ReaperKind) => runs.filter((r) => r.kind === kind).map((r) => r.at);

  it('runs a long interval first within about five minutes of start-up, then every interval', async () => {
    await start(60, 3600);
    await vi.advanceTimersByTimeAsync(6 * 60_000);
    const [first] = times('archive');
    expect(first).toBeGreaterThanOrEqual(5 * 60_000);
    expect(first).toBeLessThanOrEqual(6 * 60_000);
    await vi.advanceTimersByTimeAsync(2 * 3600_000);
    expect(times('archive')).toEqual([first, first + 3600_000, first + 2 * 3600_000]);
  });

  it('runs a short interval first after one interval, as always', async () => {
    await start(60, 0);
    await vi.advanceTimersByTimeAsync(59_000);
    expect(times('expiry')).toEqual([]);
    await vi.advanceTimersByTimeAsync(121_000);
    expect(times('expiry')).toEqual([60_000, 120_000, 180_000]);
    expect(times('archive')).toEqual([]);
  });

  it('runs nothing more once stopped, not even a first run still to come', async () => {
    await start(60, 3600);
    await scheduler.stop();
    await vi.advanceTimersByTimeAsync(2 * 3600_000);
    expect(runs).toEqual([]);
  });
});
