/**
 * Runs before every test file (vitest.config.ts `setupFiles`), in the worker that runs it. Workers are reused
 * from file to file, so whatever a file started and left running would go on into the next files, taking CPU
 * and ports and holding databases. After each file: the helpers' end-of-file work (test/helpers/file-end.ts),
 * then a check that the worker has no child process left, which fails the file that left one.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { afterAll } from 'vitest';
import { runFileEnd } from './file-end.js';

interface Child {
  pid: number;
  command: string;
}

/** The worker's live child processes, read from /proc (a zombie has exited and only awaits its parent). */
function liveChildren(): Child[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return []; // no procfs (not Linux): nothing to check
  }
  const children: Child[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // pid (comm) state ppid ...: comm may hold spaces and parentheses, so read after the last ')'.
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(ppid) !== process.pid || state === 'Z') continue;
      const command = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ').trim();
      children.push({ pid: Number(entry), command });
    } catch {
      // the process ended while being read
    }
  }
  return children;
}

afterAll(async () => {
  await runFileEnd();
  // A child told to stop may take a moment to exit; one still running after 10 s was left behind.
  const deadline = Date.now() + 10_000;
  let left = liveChildren();
  while (left.length > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    left = liveChildren();
  }
  if (left.length === 0) return;
  for (const child of left) {
    try {
      process.kill(child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  throw new Error(`the test file left ${left.length} child process(es) running (now killed): ${left.map((c) => `${c.pid} ${c.command}`).join('; ')}`);
}, 30_000);
