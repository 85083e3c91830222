import type { LoginAttempt } from '../../auth/authorizer.js';
import { clientAddress } from '../client-address.js';
import { operation, OPEN, TOKEN, type Operation } from '../operation.js';
import * as R from '../openapi/responses.js';
import type { ApiRequest } from '../request.js';
import { sendJson } from '../respond.js';
import { loginBody } from '../validation.js';

const NOT_AUDITED = 'a login changes nothing; failed attempts are access-logged at warn';

/** The attempt each login request counted before its body was read (beforeBody), for its handler. */
const attempts = new WeakMap<ApiRequest, LoginAttempt>();

/** Status and login need no token; refresh needs a still-valid one (docs/auth.md). */
export const authOperations: Operation[] = [
  operation({
    method: 'GET',
    path: '/api/auth/status',
    operationId: 'getAuthStatus',
    summary: 'Whether authentication is on, and who the caller is',
    tag: 'auth',
    access: OPEN,
    success: { status: 200, schema: R.AuthStatus, description: 'The status; `user` only for a valid token.' },
    handler: async (ctx, req, res) => sendJson(res, 200, await ctx.auth.status(req.headers.authorization, (r: ApiRequest) => clientAddress(r, ctx.config.server.trust_proxy), req)),
  }),
  operation({
    method: 'POST',
    path: '/api/auth/login',
    operationId: 'login',
    summary: 'Log in',
    description:
      'Ten attempts per minute per client address, every attempt counting whatever its outcome, a body refused as malformed, too large or with an unknown field included; beyond them 429 with Retry-After, before the body is read. 422 when authentication is off.',
    tag: 'auth',
    access: OPEN,
    audit: { notAudited: NOT_AUDITED },
    // Every attempt counts, whatever its outcome, so it is counted before the body is read: a body the pipeline
    // refuses (malformed JSON, an unknown field, too large) counts too, and beyond the limit the 429 comes
    // before any of those checks. The body's own checks come after the count, in the domain, with the schema's messages.
    beforeBody: async (ctx, req) => {
      attempts.set(req, await ctx.auth.countLoginAttempt(clientAddress(req, ctx.config.server.trust_proxy)));
    },
    body: { name: 'LoginRequest', schema: loginBody, parse: 'handler' },
    success: { status: 200, schema: R.Token, description: 'A token.' },
    errors: [400, 401, 422, 429],
    handler: async (ctx, req, res) => {
      const body = (req.body ?? {}) as Record<string, unknown>;
      const token = await ctx.auth.login(attempts.get(req)!, body.username, body.password);
      sendJson(res, 200, { token });
    },
  }),
  operation({
    method: 'POST',
    path: '/api/auth/refresh',
    operationId: 'refreshToken',
    summary: 'A new token for the caller',
    description: '422 when authentication is off, and for a caller authenticated by an access key or a ServiceAccount token (they are sent as they are; only a token from a login expires after 15 minutes).',
    tag: 'auth',
    access: TOKEN,
    audit: { notAudited: NOT_AUDITED },
    success: { status: 200, schema: R.Token, description: 'A new token.' },
    errors: [422],
    handler: async (ctx, req, res) => sendJson(res, 200, { token: await ctx.auth.refresh(req.principal) }),
  }),
];
