import { readFileSync, readdirSync } from 'node:fs';
import { execFileSync } from 'node:child_process';

let ticksPerSecond: number | undefined;

function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/** User+system CPU seconds a process has used so far (Linux /proc), or undefined where /proc is absent. */
export function processCpuSeconds(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces, so count fields from its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / clockTicks();
  } catch {
    return undefined;
  }
}

/** The local database server's pid, when it runs on this machine and /proc shows it (CPU per message). */
export function findProcess(names: string[]): number | undefined {
  try {
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        if (names.includes(readFileSync(`/proc/${entry}/comm`, 'utf8').trim())) return Number(entry);
      } catch {
        // the process ended meanwhile
      }
    }
  } catch {
    // no /proc
  }
  return undefined;
}

/** CPU seconds used by a set of processes between start() and stop(). */
export class CpuMeter {
  private readonly start: Array<number | undefined>;

  constructor(private readonly pids: Array<number | undefined>) {
    this.start = pids.map(processCpuSeconds);
  }

  elapsed(): Array<number | undefined> {
    return this.pids.map((pid, i) => {
      const now = processCpuSeconds(pid);
      const before = this.start[i];
      return now === undefined || before === undefined ? undefined : now - before;
    });
  }
}

/**
 * Waits until the processes together use under `share` of a core over a second (at most `maxMs`); resolves to
 * the milliseconds waited. A database server goes on for a while after a heavy phase (InnoDB purges the rows
 * it deleted), and a latency phase started meanwhile measures that work, not the service.
 */
export async function untilQuiet(pids: Array<number | undefined>, maxMs: number, share = 0.05): Promise<number> {
  const started = performance.now();
  while (performance.now() - started < maxMs) {
    const meter = new CpuMeter(pids);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const used = meter.elapsed().reduce<number>((sum, cpu) => sum + (cpu ?? 0), 0);
    if (used < share) break;
  }
  return Math.round(performance.now() - started);
}
