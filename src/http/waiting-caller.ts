import type { WaitingCaller } from '../queue/long-poll.js';
import { clientAddress } from './client-address.js';
import type { HttpContext } from './context.js';
import type { ApiRequest, ApiResponse } from './request.js';

/**
 * The caller of a long-polling dequeue over HTTP: gone once its connection closes before the answer is
 * written, and checked again before a claim that follows a wait as a new request would be (its token, then
 * the consume grant of the topic and group), so a wait outlasting the principal cache does not outlast a
 * revoked grant or a deleted user.
 */
export function waitingCaller(ctx: HttpContext, req: ApiRequest, res: ApiResponse, topic: string, group: string | undefined): WaitingCaller {
  const controller = new AbortController();
  if (res.destroyed) controller.abort();
  else res.once('close', () => !res.writableFinished && controller.abort());
  return {
    cancelled: controller.signal,
    reauthorize: async () => {
      if (!ctx.auth.enabled) return;
      const principal = await ctx.auth.authenticate(req.headers.authorization, () => clientAddress(req, ctx.config.server.trust_proxy));
      ctx.auth.requireConsume(principal, topic, group);
    },
  };
}
