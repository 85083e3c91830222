import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { keyFingerprint } from '../src/auth/credentials-cipher.js';
import { createUser, startAuthServer, type AuthServer } from './helpers/auth.js';
import { runCli, tempDirs } from './helpers/cli.js';
import { describeEachEngine, type TestDatabase } from './helpers/engines.js';

/**
 * `conveyor rotate-credentials-key` (docs/auth.md, Rotating the credentials key): with the new key in
 * auth.credentials_key and the old one in auth.previous_credentials_key, every access key's secret is
 * re-encrypted under the new key, beside running instances; instances holding both keys serve every key
 * throughout, and afterwards the new key alone does.
 */

const OLD = randomBytes(32).toString('base64');
const NEW = randomBytes(32).toString('base64');
const UNRELATED = randomBytes(32).toString('base64');
const tempDir = tempDirs('conveyor-rotate-');

const fingerprint = (key: string) => keyFingerprint(Buffer.from(key, 'base64'));

describeEachEngine('conveyor rotate-credentials-key', (engine) => {
  let database: TestDatabase;
  const servers: AuthServer[] = [];
  const start = async (auth: Record<string, unknown>) => {
    const server = await startAuthServer(engine, { database, overrides: { auth } });
    servers.push(server);
    return server;
  };
  const rotate = (env: Record<string, string>) => runCli(['rotate-credentials-key'], { CONVEYOR_DB_URL: database.url, CONVEYOR_LOG_LEVEL: 'error', ...env }, tempDir());

  beforeAll(async () => {
    database = await engine.createDatabase();
  });
  afterAll(async () => {
    for (const server of servers) await server.close();
    await database?.drop();
  });

  it('re-encrypts under the new key while instances with both keys serve every key, and is safe to run again', async () => {
    const onOld = await start({ credentials_key: OLD });
    const user = await createUser(onOld, ['write:orders']);
    const first = (await onOld.admin.post(`/api/users/${user.id}/access-keys`)).body;
    const use = (server: AuthServer, key: { access_key_id: string; secret: string }) => server.api.withToken(`${key.access_key_id}.${key.secret}`).enqueue('orders', 'x').then((r) => r.status);

    // Step 1 of the rotation: every instance gets the new key, keeping the old one for reading.
    const onBoth = await start({ credentials_key: NEW, previous_credentials_key: OLD });
    expect(await use(onBoth, first)).toBe(201);
    const second = (await onBoth.admin.post(`/api/users/${user.id}/access-keys`)).body;
    expect(await use(onBoth, second)).toBe(201);
    const keyIds = async () => Object.fromEntries((await onBoth.db('access_keys').select('id', 'key_id')).map((r: any) => [r.id, r.key_id]));
    expect(await keyIds()).toEqual({ [first.access_key_id]: fingerprint(OLD), [second.access_key_id]: fingerprint(NEW) });

    // Step 2: re-encrypt.
    const run = await rotate({ CONVEYOR_AUTH_CREDENTIALS_KEY: NEW, CONVEYOR_AUTH_PREVIOUS_CREDENTIALS_KEY: OLD });
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ reencrypted: 1, current: 1, unreadable: 0 });
    expect(await keyIds()).toEqual({ [first.access_key_id]: fingerprint(NEW), [second.access_key_id]: fingerprint(NEW) });
    for (const secret of [first.secret, second.secret]) expect(JSON.stringify(await onBoth.db('access_keys').select('*'))).not.toContain(secret);
    expect(run.stdout + run.stderr).not.toContain(first.secret);

    // Step 3: the old key can go; an instance that still had only the old key no longer reads them.
    const onNew = await start({ credentials_key: NEW });
    expect(await use(onNew, first)).toBe(201);
    expect(await use(onNew, second)).toBe(201);
    expect(await use(onBoth, first)).toBe(201);
    expect(await use(onOld, first)).toBe(401);

    const again = await rotate({ CONVEYOR_AUTH_CREDENTIALS_KEY: NEW });
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toEqual({ reencrypted: 0, current: 2, unreadable: 0 });
  });

  it('leaves keys under an unknown credentials key as they are and exits 1; without auth.credentials_key exits 2', async () => {
    const wrong = await rotate({ CONVEYOR_AUTH_CREDENTIALS_KEY: UNRELATED });
    expect(wrong.code).toBe(1);
    expect(JSON.parse(wrong.stdout)).toEqual({ reencrypted: 0, current: 0, unreadable: 2 });
    expect(wrong.stderr).toMatch(/^conveyor: 2 access keys \(CVAK[A-Z2-7]{16}, CVAK[A-Z2-7]{16}\) are encrypted under a key that is neither auth\.credentials_key nor auth\.previous_credentials_key; they were left as they are\n$/);

    const none = await rotate({});
    expect(none.code).toBe(2);
    expect(none.stderr).toBe('conveyor: invalid configuration: auth.credentials_key: must be set to the key to rotate to\n');
    const bad = await rotate({ CONVEYOR_AUTH_CREDENTIALS_KEY: 'short' });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^conveyor: invalid configuration: auth\.credentials_key: must be 32 bytes in base64/);
  });
});
