import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { conveyorArgs } from './conveyor-command.js';

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Temporary directories for one test file, removed after it. */
export function tempDirs(prefix: string): () => string {
  const dirs: string[] = [];
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  return () => {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    dirs.push(dir);
    return dir;
  };
}

/** Runs the CLI to completion in `cwd` with only the given CONVEYOR_* variables (none inherited from this process); `nodeArgs` go to node. */
export function runCli(args: string[], env: Record<string, string>, cwd: string, nodeArgs: string[] = []): Promise<CliRun> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('CONVEYOR_'))) as Record<string, string>;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, conveyorArgs(args, nodeArgs), { env: { ...base, ...env }, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), 45_000);
    // 'close', not 'exit': the process can be gone before its last stderr bytes were read from the pipe.
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
