import type { Grant, User } from '../../auth/users.js';
import { short, userTarget, username, uuid, fieldsSet } from '../audit-details.js';
import { decodeManager } from '../../queue/managed-by.js';
import { iso } from '../format.js';
import type { AuditCall, AuditSpec } from '../middleware/audit.js';
import type { HttpContext } from '../context.js';
import { ADMIN, operation, type BodyDeclaration, type Operation } from '../operation.js';
import * as R from '../openapi/responses.js';
import { sendEmpty, sendJson } from '../respond.js';
import { consumerGroupGrantBody, createUserBody, grantBody, updateUserBody } from '../validation.js';

const userJson = (u: User) => ({
  id: u.id,
  username: u.username,
  is_admin: u.is_admin,
  service_account: u.service_account,
  created_at: iso(u.created_at),
  updated_at: iso(u.updated_at),
});

const grantJson = (g: Grant) => ({
  id: g.id,
  user_id: g.user_id,
  action: g.action,
  topic_pattern: g.topic_pattern,
  consumer_group: g.consumer_group,
  created_at: iso(g.created_at),
  managed_by: decodeManager(g.managed_by),
});

/** The user's name, read before the change, for the audit record. */
const nameBefore = (params: Record<string, string>, ctx: Parameters<typeof username>[0]) => username(ctx, params.id);

/**
 * Creating a grant (read/write/admin, or consume as a group): its record names the user, the grant, what it
 * allows (`field` of the body) and its topic pattern.
 */
function grantOperation(
  path: string,
  action: 'grant.create' | 'consume_grant.create',
  field: 'action' | 'consumer_group',
  own: { operationId: string; summary: string; body: BodyDeclaration; add: (ctx: HttpContext, userId: string, body: unknown) => Promise<Grant> },
): Operation {
  const audit: AuditSpec<string | undefined> = {
    action,
    target: userTarget,
    before: nameBefore,
    details: (c) => ({
      username: c.state,
      grant_id: c.ok ? uuid(c.response?.id) : undefined,
      [field]: short(c.body[field]),
      topic_pattern: c.ok ? short(c.response?.topic_pattern) : short(c.body.topic_pattern),
    }),
  };
  return operation({
    method: 'POST',
    path,
    operationId: own.operationId,
    summary: own.summary,
    tag: 'users',
    access: ADMIN,
    audit,
    body: own.body,
    success: { status: 201, schema: R.Grant, description: 'The new grant.' },
    errors: [400, 404, 409],
    handler: async (ctx, req, res) => sendJson(res, 201, grantJson(await own.add(ctx, req.params.id, req.body))),
  });
}

/** Users and grants: admin only (docs/auth.md); never a password or its hash in a record. */
export const userOperations: Operation[] = [
  operation({
    method: 'GET',
    path: '/api/users',
    operationId: 'listUsers',
    summary: 'List users',
    tag: 'users',
    access: ADMIN,
    success: { status: 200, schema: R.UserList, description: 'Every user.' },
    handler: async (ctx, _req, res) => sendJson(res, 200, { items: (await ctx.users.list()).map(userJson) }),
  }),
  operation({
    method: 'POST',
    path: '/api/users',
    operationId: 'createUser',
    summary: 'Create a user',
    tag: 'users',
    access: ADMIN,
    audit: {
      action: 'user.create',
      target: (c) => (c.ok ? uuid(c.response?.id) : null),
      details: (c) => ({ username: short(c.body.username), is_admin: c.body.is_admin === true }),
    },
    body: { name: 'CreateUserRequest', schema: createUserBody },
    success: { status: 201, schema: R.User, description: 'The new user.' },
    errors: [400, 409],
    handler: async (ctx, req, res) => sendJson(res, 201, userJson(await ctx.users.create(req.body))),
  }),
  operation({
    method: 'PUT',
    path: '/api/users/:id',
    operationId: 'updateUser',
    summary: 'Change a user',
    description: 'Only the fields given change. 400 for taking the admin flag from the last admin. A new password ends the tokens the user was issued under the old one.',
    tag: 'users',
    access: ADMIN,
    // `changed` names the fields the request set.
    audit: {
      action: 'user.update',
      target: userTarget,
      before: nameBefore,
      details: (c: AuditCall<string | undefined>) => ({
        username: c.ok ? short(c.response?.username) : c.state,
        changed: fieldsSet(c.body, ['username', 'password', 'is_admin']),
        is_admin: typeof c.body.is_admin === 'boolean' ? c.body.is_admin : undefined,
      }),
    },
    body: { name: 'UpdateUserRequest', schema: updateUserBody },
    success: { status: 200, schema: R.User, description: 'The user as it is now.' },
    errors: [400, 404, 409],
    handler: async (ctx, req, res) => sendJson(res, 200, userJson(await ctx.users.update(req.params.id, req.body))),
  }),
  operation({
    method: 'DELETE',
    path: '/api/users/:id',
    operationId: 'deleteUser',
    summary: 'Delete a user',
    tag: 'users',
    access: ADMIN,
    audit: { action: 'user.delete', target: userTarget, before: nameBefore, details: (c: AuditCall<string | undefined>) => ({ username: c.state }) },
    success: { status: 204, schema: 'empty', description: 'Deleted, with its grants.' },
    description: '400 for the caller itself or the last admin; 409 for a user holding grants a Kubernetes ConveyorAccess manages.',
    errors: [400, 404, 409],
    handler: async (ctx, req, res) => {
      await ctx.users.delete(req.params.id, req.principal?.userId ?? null);
      sendEmpty(res, 204);
    },
  }),
  operation({
    method: 'GET',
    path: '/api/users/:id/grants',
    operationId: 'listGrants',
    summary: "A user's grants",
    tag: 'users',
    access: ADMIN,
    success: { status: 200, schema: R.GrantList, description: 'The grants.' },
    errors: [404],
    handler: async (ctx, req, res) => sendJson(res, 200, { items: (await ctx.users.grants(req.params.id)).map(grantJson) }),
  }),
  grantOperation('/api/users/:id/grants', 'grant.create', 'action', {
    operationId: 'createGrant',
    summary: 'Grant read, write or admin on topics',
    body: { name: 'GrantRequest', schema: grantBody },
    add: (ctx, id, body) => ctx.users.addGrant(id, body as Parameters<typeof ctx.users.addGrant>[1]),
  }),
  grantOperation('/api/users/:id/consumer-group-grants', 'consume_grant.create', 'consumer_group', {
    operationId: 'createConsumerGroupGrant',
    summary: 'Grant consuming as a consumer group',
    body: { name: 'ConsumerGroupGrantRequest', schema: consumerGroupGrantBody },
    add: (ctx, id, body) => ctx.users.addConsumeGrant(id, body as Parameters<typeof ctx.users.addConsumeGrant>[1]),
  }),
  operation({
    method: 'DELETE',
    path: '/api/users/:id/grants/:grantId',
    operationId: 'deleteGrant',
    summary: 'Revoke a grant',
    tag: 'users',
    access: ADMIN,
    audit: {
      action: 'grant.delete',
      target: userTarget,
      before: nameBefore,
      details: (c: AuditCall<string | undefined>) => ({ username: c.state, grant_id: uuid(c.params.grantId) ?? undefined }),
    },
    description: '409 for a grant a Kubernetes ConveyorAccess manages (`managed_by`): change that resource instead.',
    success: { status: 204, schema: 'empty', description: 'Revoked.' },
    errors: [404, 409],
    handler: async (ctx, req, res) => {
      await ctx.users.deleteGrant(req.params.id, req.params.grantId);
      sendEmpty(res, 204);
    },
  }),
];
