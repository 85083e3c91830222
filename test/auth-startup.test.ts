import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { JWT_SECRET } from './helpers/auth.js';
import { startChildServer } from './helpers/server.js';
import { conveyorArgs } from './helpers/conveyor-command.js';

const dir = mkdtempSync(join(tmpdir(), 'conveyor-auth-startup-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function serve(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, conveyorArgs(['serve']), {
      env: { ...process.env, CONVEYOR_SERVER_HTTP_PORT: '0', CONVEYOR_SERVER_GRPC_PORT: '0', CONVEYOR_SERVER_HOST: '127.0.0.1', CONVEYOR_DB_URL: `sqlite:${join(dir, 'refused.db')}`, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('auth start-up', () => {
  it('refuses to start with auth enabled and no secret, with one clear line', async () => {
    const res = await serve({ CONVEYOR_AUTH_ENABLED: 'true' });
    expect(res.code).not.toBe(0);
    expect(res.code).not.toBeNull();
    expect(res.stdout).toBe('');
    const lines = res.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/auth\.jwt_secret/);
    expect(lines[0]).toMatch(/32 bytes/);
  });

  it('refuses a secret shorter than 32 bytes', async () => {
    const res = await serve({ CONVEYOR_AUTH_ENABLED: 'true', CONVEYOR_AUTH_JWT_SECRET: 'short-secret' });
    expect(res.code).not.toBe(0);
    expect(res.stderr.trim().split('\n')).toHaveLength(1);
    expect(res.stderr).toMatch(/auth\.jwt_secret/);
  });

  it('creates the bootstrap admin from the environment, warning about a short password', async () => {
    const server = await startChildServer({
      CONVEYOR_DB_URL: `sqlite:${join(dir, 'bootstrap.db')}`,
      CONVEYOR_AUTH_ENABLED: 'true',
      CONVEYOR_AUTH_JWT_SECRET: JWT_SECRET,
      CONVEYOR_AUTH_USERNAME: 'boss',
      CONVEYOR_AUTH_PASSWORD: 'short',
    });
    try {
      expect(server.output()).toMatch(/bootstrap admin password .* shorter than 12 characters/);
      expect((await server.api.get('/api/messages')).status).toBe(401);
      const login = await server.api.post('/api/auth/login', { username: 'boss', password: 'short' });
      expect(login.status).toBe(200);
      const status = await server.api.withToken(login.body.token).get('/api/auth/status');
      expect(status.body.user).toMatchObject({ username: 'boss', is_admin: true });
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });
});
