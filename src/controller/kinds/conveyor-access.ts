import { consumeGrant, topicGrant, type GrantSpec } from '../../auth/users.js';
import { serviceAccountUsername } from '../../auth/service-account-names.js';
import { DomainError, invalid } from '../../queue/errors.js';
import type { KubeObject } from '../kube.js';
import type { KindHandler } from './kind.js';

/** The most grants one resource may hold (the CRD says the same): a principal's grants are read on every request. */
export const MAX_ACCESS_GRANTS = 100;

/**
 * spec.grants[i] -> the HTTP API's body for that grant, through the same validation (POST /api/users/:id/grants,
 * or /consumer-group-grants for consume), so a refused resource reports the message the API would answer.
 */
function grantOf(raw: unknown, index: number): GrantSpec {
  const where = `spec.grants[${index}]`;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw invalid(`${where}: must be an object with action and topicPattern`);
  const { action, topicPattern, consumerGroup } = raw as Record<string, unknown>;
  try {
    if (action === 'consume') return consumeGrant({ consumer_group: consumerGroup, topic_pattern: topicPattern });
    if (consumerGroup !== undefined) throw invalid('consumerGroup is only for consume grants');
    return topicGrant({ action, topic_pattern: topicPattern });
  } catch (err) {
    if (err instanceof DomainError) throw invalid(`${where}: ${err.message}`);
    throw err;
  }
}

function grantsOf(obj: KubeObject): GrantSpec[] {
  const raw = obj.spec?.grants ?? [];
  if (!Array.isArray(raw)) throw invalid('spec.grants must be a list');
  if (raw.length > MAX_ACCESS_GRANTS) throw invalid(`spec.grants: at most ${MAX_ACCESS_GRANTS} grants`);
  const grants = raw.map(grantOf);
  const seen = new Map<string, number>();
  grants.forEach((g, i) => {
    const id = `${g.action}|${g.topic_pattern}|${g.consumer_group}`;
    // The HTTP API answers the same grant twice with 409: say which entries repeat rather than apply one of them.
    if (seen.has(id)) throw invalid(`spec.grants[${i}] repeats spec.grants[${seen.get(id)}]`);
    seen.set(id, i);
  });
  return grants;
}

function principalOf(obj: KubeObject): string {
  const account = obj.spec?.serviceAccount;
  const username = typeof account === 'string' ? serviceAccountUsername(obj.metadata.namespace ?? '', account) : null;
  if (!username) throw invalid('spec.serviceAccount must name a ServiceAccount of this namespace (a DNS subdomain)');
  return username;
}

// One resource per service account: two would fight over its grant set (the oldest wins, as for a topic).
const principalTarget = (username: string) => ({ key: username, topic: '', describe: `the grants of ${username}`, auditTarget: username });

export const conveyorAccessKind: KindHandler = {
  kind: 'ConveyorAccess',
  plural: 'conveyoraccesses',
  audit: { apply: 'access_grants.apply', delete: 'access_grants.delete', release: 'access_grants.release' },
  target(obj) {
    const username = principalOf(obj);
    const grants = grantsOf(obj);
    return { ...principalTarget(username), topicPatterns: grants.map((g) => g.topic_pattern), grants };
  },
  // spec.serviceAccount is immutable; the grants may have been edited into something invalid after they applied.
  releaseTarget: (obj) => principalTarget(principalOf(obj)),
  holder: (domain, target) => domain.access.holder(target.key, target.grants ?? []),
  async apply(domain, _obj, target, manager) {
    const grants = target.grants ?? [];
    const applied = await domain.access.apply(target.key, grants, manager);
    return {
      changed: applied.changed,
      message: `${grants.length} grant${grants.length === 1 ? '' : 's'} applied to ${target.key}`,
      status: { principal: target.key, grants: grants.length },
      details: { username: target.key, added: applied.added, removed: applied.removed, adopted: applied.adopted },
    };
  },
  release: (domain, target, manager, policy) => domain.access.release(target.key, manager, policy),
};
