import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkOperations, type Operation } from '../src/http/operation.js';
import { OPERATIONS } from '../src/http/operations.js';
import { expectErrorBody } from './helpers/assert-error.js';
import { createUser, startAuthServer, type AuthServer } from './helpers/auth.js';
import { describeEachEngine } from './helpers/engines.js';

/**
 * Each HTTP operation is declared once (src/http/operation.ts); the router refuses to start with a declaration
 * that misses a part the types cannot require, so a route cannot be added without its access rule, its
 * OpenAPI text, its handler or, for a changing one, its audit declaration.
 */
describe('operation declarations', () => {
  it('every declared operation passes the check', () => {
    expect(() => checkOperations(OPERATIONS)).not.toThrow();
  });

  const put = OPERATIONS.find((op) => op.method === 'PUT' && op.path === '/api/topic-configs/:topic')!;
  const without = (field: string): Operation => {
    const copy: Record<string, unknown> = { ...put };
    delete copy[field];
    return copy as unknown as Operation;
  };

  it.each(['operationId', 'summary', 'tag', 'success', 'access', 'handler', 'audit'])('a declaration without %s fails the check, naming it', (field) => {
    expect(() => checkOperations([without(field)])).toThrow(field === 'audit' ? /audited/ : new RegExp(field));
  });

  it('a route declared twice, a reused operationId or a nameless body fails the check', () => {
    expect(() => checkOperations([put, { ...put, operationId: 'other' } as Operation])).toThrow(/declared twice/);
    expect(() => checkOperations([put, { ...put, method: 'DELETE' } as Operation])).toThrow(/operationId is used twice/);
    expect(() => checkOperations([{ ...put, body: { name: '', schema: put.body!.schema } } as Operation])).toThrow(/name/);
    expect(() => checkOperations([{ ...put, audit: { notAudited: '' } } as Operation])).toThrow(/say why/);
  });
});

describeEachEngine('a method a path does not serve (auth on)', (engine) => {
  let server: AuthServer;
  beforeAll(async () => {
    server = await startAuthServer(engine);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('is 401 without a token, then 403 where every method of the path needs the same grant, else 405', async () => {
    const user = await createUser(server, ['write:ops-405']);
    expectErrorBody(await server.api.request('PATCH', '/api/users'), 401);
    // Users and grants are the admin's whatever the method; a topic's configuration needs its admin grant.
    expectErrorBody(await user.api.request('PATCH', '/api/users'), 403);
    expectErrorBody(await user.api.request('PATCH', '/api/topic-configs/ops-405'), 403);
    expectErrorBody(await user.api.request('POST', '/api/admin/delete-reaper/schedule'), 403);
    // The message paths' methods need different grants: the 405 comes right after the token.
    const res = await user.api.request('PATCH', '/api/messages');
    expectErrorBody(res, 405);
    expect(res.headers.get('allow')).toBe('GET, POST, HEAD');
    const admin = await server.admin.request('PATCH', '/api/users');
    expectErrorBody(admin, 405);
    expect(admin.headers.get('allow')).toBe('GET, POST, HEAD');
  });
});
