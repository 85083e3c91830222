import { spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { freePorts } from './helpers/free-ports.js';
import { Api } from './helpers/http.js';

const CLI = fileURLToPath(new URL('../src/cli.ts', import.meta.url));

describe('a log that cannot be written', () => {
  it('serve with stdout on a full disk (/dev/full) still starts, serves and stops on SIGTERM; stderr says the log is dropped', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'conveyor-full-stdout-'));
    const [httpPort, grpcPort] = await freePorts(2);
    const full = openSync('/dev/full', 'w');
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'serve'], {
      env: {
        ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('CONVEYOR_'))),
        CONVEYOR_DB_URL: `sqlite:${join(dir, 'conveyor.db')}`,
        CONVEYOR_SERVER_HTTP_PORT: String(httpPort),
        CONVEYOR_SERVER_GRPC_PORT: String(grpcPort),
        CONVEYOR_SERVER_HOST: '127.0.0.1',
        CONVEYOR_LOG_LEVEL: 'info',
      },
      stdio: ['ignore', full, 'pipe'],
    });
    closeSync(full);
    let stderr = '';
    child.stderr!.on('data', (c) => (stderr += c));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      const api = new Api(`http://127.0.0.1:${httpPort}`);
      const deadline = Date.now() + 40_000;
      let healthy = false;
      while (!healthy && Date.now() < deadline && child.exitCode === null) {
        healthy = await api.get('/healthz').then((r) => r.status === 200, () => false);
        if (!healthy) await new Promise((r) => setTimeout(r, 200));
      }
      expect(healthy, stderr).toBe(true);
      expect((await api.enqueue('logless', 'still works')).status).toBe(201);
      expect(stderr).toMatch(/conveyor: writing the log to stdout failed \(ENOSPC\); log lines are dropped from now on/);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
