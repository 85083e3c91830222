import { execFile } from 'node:child_process';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachEngine } from './helpers/engines.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { conveyorArgs } from './helpers/conveyor-command.js';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function conveyor(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      conveyorArgs(args),
      { env: { ...process.env, CONVEYOR_LOG_LEVEL: 'silent', ...env }, timeout: 60_000 },
      (err, stdout, stderr) => resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describeEachEngine('conveyor reap', (engine) => {
  let server: TestServer;
  let dbUrl: string;
  beforeAll(async () => {
    server = await startTestServer(engine, { overrides: { reapers: { mode: 'external' } } });
    dbUrl = (server as unknown as { database: { url: string } }).database.url;
  });
  afterAll(async () => {
    await server?.close();
  });

  it('runs each reaper once, prints one JSON line with its count and exits 0', async () => {
    const { api } = server;
    await api.put('/api/topic-configs/cron', { message_ttl_seconds: 1 });
    await api.enqueue('cron', 'a');
    await api.enqueue('cron', 'b');
    await new Promise((resolve) => setTimeout(resolve, 1200));

    const expiry = await conveyor(['reap', 'expiry'], { CONVEYOR_DB_URL: dbUrl });
    expect(expiry.code, expiry.stderr).toBe(0);
    expect(expiry.stdout.trim().split('\n')).toHaveLength(1);
    expect(JSON.parse(expiry.stdout)).toEqual({ reaper: 'expiry', expired: 2 });
    expect((await api.get('/api/messages?topic=cron')).body.items.map((m: any) => m.status)).toEqual(['expired', 'expired']);

    const deleted = await conveyor(['reap', 'delete'], { CONVEYOR_DB_URL: dbUrl });
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(JSON.parse(deleted.stdout)).toEqual({ reaper: 'delete', deleted: 2 });
    expect((await api.get('/api/messages?topic=cron')).body.items).toEqual([]);

    const archive = await conveyor(['reap', 'archive'], { CONVEYOR_DB_URL: dbUrl });
    expect(archive.code, archive.stderr).toBe(0);
    expect(JSON.parse(archive.stdout)).toEqual({ reaper: 'archive', deleted: 0, audit_deleted: 0 });
  });

  it('gives back a delivery whose visibility timeout passed, as an attempt decided by queue.dlq_threshold', async () => {
    const { api } = server;
    const { id } = (await api.enqueue('cron-held', 'a')).body;
    expect((await api.dequeue('cron-held', { visibility_timeout_seconds: 1 })).body.messages.map((m: any) => m.id)).toEqual([id]);
    await new Promise((resolve) => setTimeout(resolve, 1100));

    const expiry = await conveyor(['reap', 'expiry'], { CONVEYOR_DB_URL: dbUrl, CONVEYOR_QUEUE_DLQ_THRESHOLD: '1' });
    expect(expiry.code, expiry.stderr).toBe(0);
    expect(JSON.parse(expiry.stdout)).toEqual({ reaper: 'expiry', expired: 0 });
    expect((await api.get('/api/messages?topic=cron-held')).body.items).toEqual([]);
    expect((await api.get('/api/messages?topic=cron-held.dlq')).body.items).toEqual([
      expect.objectContaining({ id, status: 'pending', retry_count: 1, last_error: 'visibility timeout expired' }),
    ]);
  });

  it('exits non-zero with one clear message when the database cannot be reached', async () => {
    const url = engine.name === 'mysql' ? 'mysql://root@127.0.0.1:1/conveyor' : 'sqlite:/dev/null/conveyor.db';
    const run = await conveyor(['reap', 'expiry'], { CONVEYOR_DB_URL: url });
    expect(run.code).not.toBe(0);
    expect(run.stdout).toBe('');
    const lines = run.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^conveyor: /);
    expect(lines[0]).toMatch(/database|ENOTDIR|directory/i);
  });

  it('rejects an unknown reaper with the usage and exit code 2', async () => {
    const run = await conveyor(['reap', 'everything'], { CONVEYOR_DB_URL: dbUrl });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/reap needs one of expiry, delete, archive/);
  });
});
