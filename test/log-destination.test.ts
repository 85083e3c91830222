import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freePorts } from './helpers/free-ports.js';
import { Api } from './helpers/http.js';
import { conveyorArgs } from './helpers/conveyor-command.js';

/** `conveyor serve` on a fresh SQLite file with the given stdio; `run` gets its API while it runs. */
async function withServer(stdio: () => StdioOptions, run: (child: ChildProcess, api: Api, exited: Promise<number | null>) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'conveyor-log-destination-'));
  const [httpPort, grpcPort] = await freePorts(2);
  const child = spawn(process.execPath, conveyorArgs(['serve']), {
    env: {
      ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('CONVEYOR_'))),
      CONVEYOR_DB_URL: `sqlite:${join(dir, 'conveyor.db')}`,
      CONVEYOR_SERVER_HTTP_PORT: String(httpPort),
      CONVEYOR_SERVER_GRPC_PORT: String(grpcPort),
      CONVEYOR_SERVER_HOST: '127.0.0.1',
      CONVEYOR_LOG_LEVEL: 'info',
    },
    stdio: stdio(),
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    await run(child, new Api(`http://127.0.0.1:${httpPort}`), exited);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

async function healthy(child: ChildProcess, api: Api): Promise<boolean> {
  const deadline = Date.now() + 100_000;
  while (Date.now() < deadline && child.exitCode === null) {
    if (await api.get('/healthz').then((r) => r.status === 200, () => false)) return true;
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
}

describe('a log that cannot be written', () => {
  it('serve with stdout on a full disk (/dev/full) still starts, serves and stops on SIGTERM; stderr says the log is dropped', async () => {
    let full = -1;
    await withServer(
      () => {
        full = openSync('/dev/full', 'w');
        return ['ignore', full, 'pipe'];
      },
      async (child, api, exited) => {
        closeSync(full);
        let stderr = '';
        child.stderr!.on('data', (c) => (stderr += c));
        expect(await healthy(child, api), stderr).toBe(true);
        expect((await api.enqueue('logless', 'still works')).status).toBe(201);
        expect(stderr).toMatch(/conveyor: writing the log to stdout failed \(ENOSPC\); log lines are dropped from now on/);
        child.kill('SIGTERM');
        expect(await exited).toBe(0);
      },
    );
  }, 120_000);

  it('serve whose stdout and stderr pipe is closed by its reader (`serve 2>&1 | head -1`) goes on serving and stops on SIGTERM with 0', async () => {
    await withServer(
      () => ['ignore', 'pipe', 'pipe'],
      async (child, api, exited) => {
        let stdout = '';
        await new Promise<void>((resolve) => {
          child.stdout!.on('data', (c) => {
            stdout += c;
            if (stdout.includes('conveyor listening')) resolve();
          });
        });
        child.stdout!.destroy();
        child.stderr!.destroy();
        // A 404 is logged at info: a write into the closed pipe.
        expect((await api.get('/api/no-such-route')).status).toBe(404);
        await new Promise((r) => setTimeout(r, 300));
        expect(child.exitCode).toBeNull();
        expect((await api.enqueue('pipeless', 'still works')).status).toBe(201);
        const { body } = await api.dequeue('pipeless');
        expect(body.messages.map((m: { payload: string }) => m.payload)).toEqual(['still works']);
        child.kill('SIGTERM');
        expect(await exited).toBe(0);
      },
    );
  }, 120_000);
});
