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
