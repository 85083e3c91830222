import type { Metadata } from '@grpc/grpc-js';
import type { Authorizer, Principal } from '../auth/authorizer.js';
import type { MessageService } from '../queue/messages.js';

/** What a call wants to do, for the same grant checks as HTTP (docs/auth.md, Grants). */
export type Access =
  | { action: 'produce'; topic: string }
  | { action: 'consume'; topic: string; group?: string }
  /** Ack/Nack name messages by id only: the grant is checked on the topics they live in. */
  | { action: 'settle'; ids: string[]; group?: string };

/**
 * Throws DomainError('unauthenticated' | 'forbidden') to refuse a call; runs before the call's work. Every
 * call needs a valid token, also one whose list of accesses is empty (an empty batch). Resolves to the
 * caller (null with auth off), whose Subscribe streams are counted.
 */
export type CallGuard = (metadata: Metadata, accesses: Access[]) => Promise<Principal | null>;

function authorizationHeader(metadata: Metadata): string | undefined {
  const value = metadata.get('authorization')[0];
  return typeof value === 'string' ? value : undefined;
}

/**
 * `authorization: Bearer <token>` metadata through the transport-neutral Authorizer, with the grants HTTP
 * uses: write to enqueue; write or a consume grant (for that group) to dequeue, subscribe, ack and nack.
 * Unknown ids pass on, so Ack/Nack answer their usual NOT_FOUND without revealing more to the unauthorised.
 */
export function authorizerGuard(auth: Authorizer, messages: MessageService): CallGuard {
  return async (metadata, accesses) => {
    if (!auth.enabled) return null;
    const principal = await auth.authenticate(authorizationHeader(metadata));
    for (const access of accesses) {
      switch (access.action) {
        case 'produce':
          auth.requireTopic(principal, 'write', access.topic);
          break;
        case 'consume':
          auth.requireConsume(principal, access.topic, access.group);
          break;
        case 'settle':
          for (const topic of await messages.topicsOf(access.ids)) auth.requireConsume(principal, topic, access.group);
      }
    }
    return principal;
  };
}
