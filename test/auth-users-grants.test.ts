import { afterAll, beforeAll, expect, it } from 'vitest';
import { expectErrorBody } from './helpers/assert-error.js';
import { createUser, startAuthServer, USER_PASSWORD, type AuthServer } from './helpers/auth.js';
import { describeEachEngine } from './helpers/engines.js';
import { startTestServer } from './helpers/server.js';

const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';
const RFC3339_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describeEachEngine('users and grants endpoints', (engine) => {
  let server: AuthServer;
  beforeAll(async () => {
    server = await startAuthServer(engine);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('creates a user (201) without ever returning a password, and lists users under items', async () => {
    const created = await server.admin.post('/api/users', { username: 'alice', password: 'alice-password-1', is_admin: false });
    expect(created.status).toBe(201);
    expect(Object.keys(created.body).sort()).toEqual(['created_at', 'id', 'is_admin', 'service_account', 'updated_at', 'username']);
    expect(created.body).toMatchObject({ username: 'alice', is_admin: false, service_account: false });
    expect(created.body.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.body.created_at).toMatch(RFC3339_MS);

    const list = await server.admin.get('/api/users');
    expect(list.status).toBe(200);
    expect(Object.keys(list.body)).toEqual(['items']);
    const alice = list.body.items.find((u: any) => u.username === 'alice');
    expect(alice).toEqual(created.body);
    expect(list.text).not.toMatch(/password|argon2/);
    expect(list.body.items.find((u: any) => u.username === 'admin').is_admin).toBe(true);
  });

  it('validates user creation: missing fields, short password, wrong types (400), taken username (409)', async () => {
    expectErrorBody(await server.admin.post('/api/users', { password: 'long-enough-pass' }), 400);
    expectErrorBody(await server.admin.post('/api/users', { username: 'bob' }), 400);
    const short = await server.admin.post('/api/users', { username: 'bob', password: 'elevenchars' });
    expectErrorBody(short, 400);
    expect(short.body.error).toMatch(/12/);
    expectErrorBody(await server.admin.post('/api/users', { username: 'bob', password: 'long-enough-pass', is_admin: 'yes' }), 400);
    expectErrorBody(await server.admin.post('/api/users', 'not an object'), 400);
    expect((await server.admin.post('/api/users', { username: 'bob', password: 'twelve-chars' })).status).toBe(201);
    expectErrorBody(await server.admin.post('/api/users', { username: 'bob', password: 'long-enough-pass' }), 409);
  });

  it('takes usernames exactly as typed on both engines: no surrounding whitespace, no login by a padded name', async () => {
    for (const username of ['erin ', ' erin', 'erin\t']) {
      const res = await server.admin.post('/api/users', { username, password: 'long-enough-pass' });
      expectErrorBody(res, 400);
      expect(res.body.error).toBe('username must not begin or end with whitespace');
    }
    expect((await server.admin.post('/api/users', { username: 'erin', password: 'long-enough-pass' })).status).toBe(201);
    // MySQL's collation ignores trailing spaces: the lookup must not find erin for `erin  `.
    const padded = await server.api.post('/api/auth/login', { username: 'erin  ', password: 'long-enough-pass' });
    expectErrorBody(padded, 401);
    expect((await server.api.post('/api/auth/login', { username: 'erin', password: 'long-enough-pass' })).status).toBe(200);
  });

  it('updates only the supplied fields; 400 short password, 404 unknown user, 409 taken name', async () => {
    const carol = (await server.admin.post('/api/users', { username: 'carol', password: USER_PASSWORD })).body;
    const renamed = await server.admin.put(`/api/users/${carol.id}`, { username: 'caroline' });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ id: carol.id, username: 'caroline', is_admin: false, created_at: carol.created_at });
    const promoted = await server.admin.put(`/api/users/${carol.id}`, { is_admin: true });
    expect(promoted.body).toMatchObject({ username: 'caroline', is_admin: true });

    expect((await server.admin.put(`/api/users/${carol.id}`, { password: 'a-brand-new-password' })).status).toBe(200);
    expect((await server.api.post('/api/auth/login', { username: 'caroline', password: 'a-brand-new-password' })).status).toBe(200);
    expectErrorBody(await server.api.post('/api/auth/login', { username: 'caroline', password: USER_PASSWORD }), 401);

    expectErrorBody(await server.admin.put(`/api/users/${carol.id}`, { password: 'short' }), 400);
    expectErrorBody(await server.admin.put(`/api/users/${UNKNOWN_ID}`, { is_admin: true }), 404);
    expectErrorBody(await server.admin.put('/api/users/not-a-uuid', { is_admin: true }), 404);
    expectErrorBody(await server.admin.put(`/api/users/${carol.id}`, { username: 'admin' }), 409);
  });

  it('deletes users: 204, then 404; 400 for yourself; 400 for the last admin', async () => {
    const dave = (await server.admin.post('/api/users', { username: 'dave', password: USER_PASSWORD })).body;
    expect((await server.admin.delete(`/api/users/${dave.id}`)).status).toBe(204);
    expectErrorBody(await server.admin.delete(`/api/users/${dave.id}`), 404);
    expectErrorBody(await server.admin.delete(`/api/users/${UNKNOWN_ID}`), 404);

    const self = await server.admin.delete(`/api/users/${server.adminId}`);
    expectErrorBody(self, 400);

    // The bootstrap admin becomes the only admin; demoting itself would leave none.
    const list = (await server.admin.get('/api/users')).body.items;
    for (const u of list) if (u.is_admin && u.id !== server.adminId) await server.admin.put(`/api/users/${u.id}`, { is_admin: false });
    const lastDemote = await server.admin.put(`/api/users/${server.adminId}`, { is_admin: false });
    expectErrorBody(lastDemote, 400);
    expect(lastDemote.body.error).toMatch(/last admin/);
    expect((await server.admin.get('/api/users')).status).toBe(200);

    // With a second admin, one may demote the other.
    const other = await createUser(server, [], true);
    expect((await other.api.put(`/api/users/${server.adminId}`, { is_admin: false })).body.is_admin).toBe(false);
    expect((await other.api.put(`/api/users/${server.adminId}`, { is_admin: true })).body.is_admin).toBe(true);
  });

  it('adds, lists and deletes grants; validates action and pattern; 409 duplicate; 404 unknown user or grant', async () => {
    const erin = await createUser(server);
    const base = `/api/users/${erin.id}/grants`;
    const read = await server.admin.post(base, { action: 'read', topic_pattern: 'orders.*' });
    expect(read.status).toBe(201);
    expect(Object.keys(read.body).sort()).toEqual(['action', 'consumer_group', 'created_at', 'id', 'managed_by', 'topic_pattern', 'user_id']);
    expect(read.body.managed_by).toBeNull(); // made through the API; a ConveyorAccess's grants name it (controller-access.test.ts)
    expect(read.body).toMatchObject({ user_id: erin.id, action: 'read', topic_pattern: 'orders.*', consumer_group: '' });
    const all = await server.admin.post(base, { action: 'write' });
    expect(all.body.topic_pattern).toBe('*');
    expect((await server.admin.post(base, { action: 'admin', topic_pattern: 'pay*' })).status).toBe(201);

    expectErrorBody(await server.admin.post(base, { action: 'read', topic_pattern: 'orders.*' }), 409);
    expectErrorBody(await server.admin.post(base, {}), 400);
    expectErrorBody(await server.admin.post(base, { action: 'delete' }), 400);
    expectErrorBody(await server.admin.post(base, { action: 'consume', topic_pattern: 'x' }), 400);
    expectErrorBody(await server.admin.post(base, { action: 'read', topic_pattern: 'bad pattern!' }), 400);
    expectErrorBody(await server.admin.post(base, { action: 'read', topic_pattern: 'a*b' }), 400);
    expectErrorBody(await server.admin.post(`/api/users/${UNKNOWN_ID}/grants`, { action: 'read' }), 404);
    expectErrorBody(await server.admin.get(`/api/users/${UNKNOWN_ID}/grants`), 404);

    const list = await server.admin.get(base);
    expect(Object.keys(list.body)).toEqual(['items']);
    expect(list.body.items.map((g: any) => `${g.action}:${g.topic_pattern}`)).toEqual(['read:orders.*', 'write:*', 'admin:pay*']);

    const frank = await createUser(server);
    expectErrorBody(await server.admin.delete(`/api/users/${frank.id}/grants/${read.body.id}`), 404);
    expectErrorBody(await server.admin.delete(`${base}/${UNKNOWN_ID}`), 404);
    expect((await server.admin.delete(`${base}/${read.body.id}`)).status).toBe(204);
    expectErrorBody(await server.admin.delete(`${base}/${read.body.id}`), 404);
    expect((await server.admin.get(base)).body.items).toHaveLength(2);
  });

  it('adds consumer-group grants (action consume); 400 without a group, 409 duplicate, removable by the grant endpoint', async () => {
    const gina = await createUser(server);
    const url = `/api/users/${gina.id}/consumer-group-grants`;
    const grant = await server.admin.post(url, { consumer_group: 'billing', topic_pattern: 'orders' });
    expect(grant.status).toBe(201);
    expect(grant.body).toMatchObject({ action: 'consume', consumer_group: 'billing', topic_pattern: 'orders', user_id: gina.id });
    expect((await server.admin.post(url, { consumer_group: 'shipping' })).body.topic_pattern).toBe('*');
    expect((await server.admin.post(url, { consumer_group: 'shipping', topic_pattern: 'orders' })).status).toBe(201);
    expectErrorBody(await server.admin.post(url, { consumer_group: 'billing', topic_pattern: 'orders' }), 409);
    expectErrorBody(await server.admin.post(url, { topic_pattern: 'orders' }), 400);
    expectErrorBody(await server.admin.post(url, { consumer_group: '' }), 400);
    expectErrorBody(await server.admin.post(`/api/users/${UNKNOWN_ID}/consumer-group-grants`, { consumer_group: 'x' }), 404);
    expect((await server.admin.delete(`/api/users/${gina.id}/grants/${grant.body.id}`)).status).toBe(204);
    expect((await server.admin.get(`/api/users/${gina.id}/grants`)).body.items.map((g: any) => g.consumer_group)).toEqual(['shipping', 'shipping']);
  });

  it('refuses a consume grant for a group name no group can have (400); every registrable name and topic pattern stays valid', async () => {
    const kim = await createUser(server);
    const url = `/api/users/${kim.id}/consumer-group-grants`;
    const NAME_RULE = 'consumer_group must be 1-200 characters of A-Z a-z 0-9 . _ - and start with a letter or digit';
    // A consume grant names one group exactly (no patterns for groups): these could never match a registered group.
    for (const consumer_group of ['-bad!', 'bad!', '.hidden', '_g', 'a b', 'a/b', 'café', '*', 'billing*', 'g\u0000']) {
      const res = await server.admin.post(url, { consumer_group, topic_pattern: 'orders' });
      expectErrorBody(res, 400);
      expect(res.body.error, consumer_group).toBe(NAME_RULE);
    }
    const tooLong = await server.admin.post(url, { consumer_group: 'g'.repeat(201) });
    expectErrorBody(tooLong, 400);
    expect(tooLong.body.error).toBe('consumer_group must be at most 200 characters');
    // The name rule is the registration rule: the same names are refused there.
    for (const consumer_group of ['-bad!', '*']) expectErrorBody(await server.admin.post('/api/topics/orders/consumer-groups', { consumer_group }), 400);
    expect((await server.admin.get(`/api/users/${kim.id}/grants`)).body.items).toEqual([]);

    const valid: Array<[string, string]> = [
      ['billing', '*'],
      ['g', 'orders'],
      ['0.group_name-1', 'orders.*'],
      ['g'.repeat(200), 'pay*'],
      ['billing', 'shop.eu'],
    ];
    for (const [consumer_group, topic_pattern] of valid) {
      const res = await server.admin.post(url, { consumer_group, topic_pattern });
      expect(res.status, `${consumer_group} on ${topic_pattern}: ${res.text}`).toBe(201);
      expect(res.body).toMatchObject({ action: 'consume', consumer_group, topic_pattern });
    }
    expectErrorBody(await server.admin.post(url, { consumer_group: 'billing', topic_pattern: '*' }), 409);
    expectErrorBody(await server.admin.post(`/api/users/${UNKNOWN_ID}/consumer-group-grants`, { consumer_group: 'billing' }), 404);
    expect((await server.admin.get(`/api/users/${kim.id}/grants`)).body.items).toHaveLength(valid.length);
  });

  it('deletes a user together with its grants', async () => {
    const hank = await createUser(server, ['read:*', 'consume:*:g']);
    expect((await server.admin.delete(`/api/users/${hank.id}`)).status).toBe(204);
    expectErrorBody(await server.admin.get(`/api/users/${hank.id}/grants`), 404);
  });

  it('keeps every user and grant endpoint admin-only (403 for a user with grants on everything)', async () => {
    const ivy = await createUser(server, ['read:*', 'write:*', 'admin:*']);
    const calls = [
      ivy.api.get('/api/users'),
      ivy.api.post('/api/users', { username: 'x', password: USER_PASSWORD }),
      ivy.api.put(`/api/users/${ivy.id}`, { is_admin: true }),
      ivy.api.delete(`/api/users/${server.adminId}`),
      ivy.api.get(`/api/users/${ivy.id}/grants`),
      ivy.api.post(`/api/users/${ivy.id}/grants`, { action: 'read' }),
      ivy.api.delete(`/api/users/${ivy.id}/grants/${UNKNOWN_ID}`),
      ivy.api.post(`/api/users/${ivy.id}/consumer-group-grants`, { consumer_group: 'g' }),
    ];
    for (const res of await Promise.all(calls)) {
      expectErrorBody(res, 403);
      expect(res.body.error).toBe('admin access required');
    }
    for (const res of await Promise.all([server.api.get('/api/users'), server.api.post(`/api/users/${ivy.id}/grants`, { action: 'read' })])) {
      expectErrorBody(res, 401);
    }
  });
});

describeEachEngine('users without auth', (engine) => {
  it('refuses to delete the last admin (400) even with auth disabled, and allows it while another admin exists', async () => {
    const server = await startTestServer(engine, { overrides: { auth: { username: 'root', password: 'root-password-12' } } });
    try {
      const root = (await server.api.get('/api/users')).body.items.find((u: any) => u.username === 'root');
      expect(root.is_admin).toBe(true);
      const res = await server.api.delete(`/api/users/${root.id}`);
      expectErrorBody(res, 400);
      expect(res.body.error).toMatch(/last admin/);
      const second = await server.api.post('/api/users', { username: 'second', password: USER_PASSWORD, is_admin: true });
      expect((await server.api.delete(`/api/users/${root.id}`)).status).toBe(204);
      expectErrorBody(await server.api.put(`/api/users/${second.body.id}`, { is_admin: false }), 400);
    } finally {
      await server.close();
    }
  });

  it('keeps one admin when the last two are demoted at the same time (one 200, one 400, never a 500)', async () => {
    const server = await startTestServer(engine);
    try {
      const create = (username: string) => server.api.post('/api/users', { username, password: USER_PASSWORD, is_admin: true });
      const [a, b] = await Promise.all([create('a'), create('b')]);
      for (let round = 0; round < 3; round++) {
        const results = await Promise.all([a, b].map((u) => server.api.put(`/api/users/${u.body.id}`, { is_admin: false })));
        expect(results.map((r) => r.status).sort()).toEqual([200, 400]);
        const admins = (await server.api.get('/api/users')).body.items.filter((u: any) => u.is_admin);
        expect(admins).toHaveLength(1);
        await Promise.all([a, b].map((u) => server.api.put(`/api/users/${u.body.id}`, { is_admin: true })));
      }
    } finally {
      await server.close();
    }
  });
});
