import { isValidPattern, patternMatches } from '../auth/grants-policy.js';

/**
 * controller.topic_ownership: the topic patterns (the grants' syntax: `*`, `<prefix>.*`, `<prefix>*`, exact)
 * each namespace's resources may manage. Undefined = no rule: any namespace may manage any topic.
 */
export type TopicOwnership = ReadonlyMap<string, readonly string[]> | undefined;

const NAMESPACE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** `team-a=orders,orders.*; team-b=payments.*` -> team-a: [orders, orders.*], team-b: [payments.*]. Throws on a bad entry. */
export function parseTopicOwnership(text: string): TopicOwnership {
  if (text.trim() === '') return undefined;
  const ownership = new Map<string, string[]>();
  for (const entry of text.split(';').map((e) => e.trim()).filter(Boolean)) {
    const eq = entry.indexOf('=');
    if (eq < 0) throw new Error(`"${entry}": expected <namespace>=<pattern>[,<pattern>...]`);
    const namespace = entry.slice(0, eq).trim();
    if (!NAMESPACE.test(namespace)) throw new Error(`"${namespace}" is not a namespace name`);
    const patterns = entry.slice(eq + 1).split(',').map((p) => p.trim()).filter(Boolean);
    if (patterns.length === 0) throw new Error(`namespace "${namespace}": no topic pattern (leave the namespace out to allow it none)`);
    for (const pattern of patterns) if (!isValidPattern(pattern)) throw new Error(`namespace "${namespace}": "${pattern}" is not a topic pattern (*, <prefix>.*, <prefix>* or a topic name)`);
    ownership.set(namespace, [...(ownership.get(namespace) ?? []), ...patterns]);
  }
  return ownership;
}

/** The config schema's check: what is wrong with the value, or undefined. */
export function topicOwnershipProblem(text: string): string | undefined {
  try {
    parseTopicOwnership(text);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

/** Why a resource in `namespace` may not manage `topic`, or undefined when it may. */
export function ownershipRefusal(ownership: TopicOwnership, namespace: string, topic: string): string | undefined {
  if (!ownership) return undefined;
  const patterns = ownership.get(namespace) ?? [];
  if (patterns.some((p) => patternMatches(p, topic))) return undefined;
  const allowed = patterns.length > 0 ? `may manage only topics matching ${patterns.join(', ')}` : 'may manage no topic';
  return `topic "${topic}" is not this namespace's: resources in namespace "${namespace}" ${allowed} (controller.topic_ownership)`;
}

const stem = (pattern: string) => pattern.slice(0, pattern.endsWith('.*') ? -2 : -1);

/**
 * Whether every topic `pattern` can match is matched by `allowed` (both in the grants' syntax). Conservative:
 * an open-ended pattern (`orders.*`, `orders*`) is only within an open-ended pattern that covers its whole
 * prefix, never within a list of exact topics, however long.
 */
export function patternWithin(pattern: string, allowed: string): boolean {
  if (allowed === '*') return true;
  if (pattern === '*') return false;
  if (!pattern.endsWith('*')) return patternMatches(allowed, pattern);
  if (!allowed.endsWith('*')) return false;
  const prefix = stem(pattern);
  const allowedPrefix = stem(allowed);
  // `orders.*` covers `orders` and `orders.<anything>`; `orders*` everything beginning with `orders`.
  if (!allowed.endsWith('.*')) return prefix.startsWith(allowedPrefix);
  if (pattern.endsWith('.*') && prefix === allowedPrefix) return true;
  return prefix.startsWith(`${allowedPrefix}.`);
}

/** Why a resource in `namespace` may not hold grants on `patterns`, or undefined when every one is within its topics. */
export function patternsRefusal(ownership: TopicOwnership, namespace: string, patterns: readonly string[]): string | undefined {
  if (!ownership) return undefined;
  const allowedPatterns = ownership.get(namespace) ?? [];
  const outside = patterns.find((p) => !allowedPatterns.some((allowed) => patternWithin(p, allowed)));
  if (outside === undefined) return undefined;
  const allowed = allowedPatterns.length > 0 ? `may grant only within topics matching ${allowedPatterns.join(', ')}` : 'may grant on no topic';
  return `topic pattern "${outside}" is not within this namespace's topics: resources in namespace "${namespace}" ${allowed} (controller.topic_ownership)`;
}
