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
 * caller (null with auth off), whose Subscribe streams are counted. `peer` (grpc-js's `ipv4:<ip>:<port>`)
 * is given by the check that runs before the request is read (authenticate-first.ts): failed access keys
 * count against its address.
 */
export type CallGuard = (metadata: Metadata, accesses: Access[], peer?: string) => Promise<Principal | null>;

/**
 * How long after a call's first authentication its handler's check of the same metadata reuses the answer:
 * each call is checked twice (before its request is read, and with what it wants), and an access key costs a
 * read of its row each time. A Subscribe stream's check every 5 seconds authenticates afresh.
 */
const REUSE_MS = 1000;

/** The client's address in a grpc-js peer: `ipv4:10.0.0.7:51234` → `10.0.0.7`, `ipv6:[::1]:51234` → `::1`. */
export function peerAddress(peer: string): string {
  const match = /^ipv[46]:\[?(.*?)\]?:\d+$/.exec(peer);
  return match ? match[1] : peer;
}

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
  const authenticated = new WeakMap<Metadata, { principal: Principal | null; at: number; peer?: string }>();
  return async (metadata, accesses, peer) => {
    if (!auth.enabled) return null;
    const earlier = authenticated.get(metadata);
    let principal: Principal | null;
    if (earlier && peer === undefined && performance.now() - earlier.at < REUSE_MS) principal = earlier.principal;
    else {
      const address = peer ?? earlier?.peer;
      principal = await auth.authenticate(authorizationHeader(metadata), address === undefined ? undefined : peerAddress, address);
      authenticated.set(metadata, { principal, at: performance.now(), peer: address });
    }
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
