import type { AccessKey } from '../../auth/access-keys.js';
import { isAccessKeyId } from '../../auth/access-key-format.js';
import { userTarget, username } from '../audit-details.js';
import { iso } from '../format.js';
import type { AuditCall } from '../middleware/audit.js';
import { ADMIN, operation, type Operation } from '../operation.js';
import * as R from '../openapi/responses.js';
import { sendEmpty, sendJson } from '../respond.js';

const keyJson = (k: AccessKey) => ({ access_key_id: k.access_key_id, user_id: k.user_id, created_at: iso(k.created_at), last_used_at: k.last_used_at === null ? null : iso(k.last_used_at) });

/** A key id the caller sent or was answered, for the record; anything else (a secret pasted by mistake) is dropped. */
const keyId = (value: unknown) => (isAccessKeyId(value) ? value : undefined);

const OFF = '503 while access keys are off (no auth.credentials_key).';

/**
 * Access keys of a user (docs/auth.md, Access keys): admin only, like the user's grants. Creating and revoking
 * are audited with the key's id; the secret is in the creation's answer only, never in a record or a log.
 */
export const accessKeyOperations: Operation[] = [
  operation({
    method: 'GET',
    path: '/api/users/:id/access-keys',
    operationId: 'listAccessKeys',
    summary: "A user's access keys",
    description: `Never their secrets. ${OFF}`,
    tag: 'users',
    access: ADMIN,
    success: { status: 200, schema: R.AccessKeyList, description: 'The keys, oldest first.' },
    errors: [404],
    handler: async (ctx, req, res) => sendJson(res, 200, { items: (await ctx.accessKeys.list(req.params.id)).map(keyJson) }),
  }),
  operation({
    method: 'POST',
    path: '/api/users/:id/access-keys',
    operationId: 'createAccessKey',
    summary: 'Create an access key for a user',
    description: `The key acts as its user: \`Authorization: Bearer <access_key_id>.<secret>\` on HTTP and gRPC. The secret is in this answer only. 400 for a service account; 409 when the user already holds 10 keys. ${OFF}`,
    tag: 'users',
    access: ADMIN,
    audit: {
      action: 'access_key.create',
      target: userTarget,
      before: (params, ctx) => username(ctx, params.id),
      details: (c: AuditCall<string | undefined>) => ({ username: c.state, access_key_id: c.ok ? keyId(c.response?.access_key_id) : undefined }),
    },
    success: { status: 201, schema: R.NewAccessKey, description: 'The new key with its secret.' },
    errors: [400, 404, 409],
    handler: async (ctx, req, res) => {
      const key = await ctx.accessKeys.create(req.params.id);
      sendJson(res, 201, { access_key_id: key.access_key_id, secret: key.secret, created_at: iso(key.created_at) });
    },
  }),
  operation({
    method: 'DELETE',
    path: '/api/users/:id/access-keys/:keyId',
    operationId: 'deleteAccessKey',
    summary: 'Revoke an access key',
    description: `Requests with the key get 401 from the next one on, on every instance. ${OFF}`,
    tag: 'users',
    access: ADMIN,
    audit: {
      action: 'access_key.delete',
      target: userTarget,
      before: (params, ctx) => username(ctx, params.id),
      details: (c: AuditCall<string | undefined>) => ({ username: c.state, access_key_id: keyId(c.params.keyId) }),
    },
    success: { status: 204, schema: 'empty', description: 'Revoked.' },
    errors: [404],
    handler: async (ctx, req, res) => {
      await ctx.accessKeys.revoke(req.params.id, req.params.keyId);
      sendEmpty(res, 204);
    },
  }),
];
