import type { TopicScope } from '../store/messages/browse.js';
import type { GrantAction, GrantRule, Principal } from './principal.js';

/**
 * Pattern rules (docs/auth.md, Grants): `*` matches every topic; `<prefix>.*` matches the prefix
 * topic itself and its dotted sub-topics (`orders.*` covers `orders`, `orders.dlq`, `orders.eu`);
 * `<prefix>*` matches every topic starting with the prefix; anything else matches exactly one topic.
 */
export function patternMatches(pattern: string, topic: string): boolean {
  if (pattern === '*') return true;
  if (pattern.endsWith('.*')) {
    const prefix = pattern.slice(0, -2);
    return topic === prefix || topic.startsWith(`${prefix}.`);
  }
  if (pattern.endsWith('*')) return topic.startsWith(pattern.slice(0, -1));
  return topic === pattern;
}

/** The topics `action`'s grants cover (patternMatches); null when they cover every topic. */
export function grantedScope(principal: Principal, action: Exclude<GrantAction, 'consume'>): TopicScope | null {
  const scope: TopicScope = { names: [], prefixes: [] };
  for (const { action: granted, topicPattern: pattern } of principal.grants) {
    if (granted !== action) continue;
    if (pattern === '*') return null;
    if (pattern.endsWith('.*')) {
      scope.names.push(pattern.slice(0, -2));
      scope.prefixes.push(pattern.slice(0, -1));
    } else if (pattern.endsWith('*')) scope.prefixes.push(pattern.slice(0, -1));
    else scope.names.push(pattern);
  }
  return scope;
}

const VALID_PATTERN = /^(\*|[A-Za-z0-9][A-Za-z0-9._-]{0,199}\*?)$/;

/** A pattern is `*` or a topic name optionally followed by `*` (which covers `<prefix>.*`). */
export function isValidPattern(pattern: string): boolean {
  return VALID_PATTERN.test(pattern);
}

function grantsFor(principal: Principal, action: GrantAction, topic: string): GrantRule[] {
  return principal.grants.filter((g) => g.action === action && patternMatches(g.topicPattern, topic));
}

/** Admins bypass every per-topic check. */
export function mayUseTopic(principal: Principal, action: Exclude<GrantAction, 'consume'>, topic: string): boolean {
  return principal.isAdmin || grantsFor(principal, action, topic).length > 0;
}

/**
 * Dequeue, ack and nack (docs/auth.md, Grants: consumer-group rules). Once any consume grant covers the topic,
 * only its groups are allowed, whatever write grants exist; without one, a write grant allows any group.
 */
export function mayConsume(principal: Principal, topic: string, consumerGroup: string | undefined): boolean {
  if (principal.isAdmin) return true;
  const consumeGrants = grantsFor(principal, 'consume', topic);
  if (consumeGrants.length > 0) return !!consumerGroup && consumeGrants.some((g) => g.consumerGroup === consumerGroup);
  return grantsFor(principal, 'write', topic).length > 0;
}
