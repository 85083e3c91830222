import type { Knex } from 'knex';
import { isConsumerGroupRegistered } from '../store/consumer-groups.js';
import { claimDeliveries } from '../store/deliveries/claim.js';
import { findDeadLetter, requeueToGroups } from '../store/deliveries/requeue.js';
import { ackDeliveries, nackDelivery, releaseExpiredDeliveries } from '../store/deliveries/settle.js';
import type { AttemptResult, AttemptRules, RequeueTarget, Returned } from '../store/messages/settle.js';
import type { MessageRow } from '../store/messages/rows.js';
import type { Catalog } from './catalog.js';
import { DomainError, invalid } from './errors.js';
import { assertConsumerGroupName } from './consumer-group-names.js';
import { isDlqTopic } from './topic-names.js';

export const groupRequired = () => invalid('consumer_group is required');
const notRegisteredGroup = (group: string, topic: string) =>
  new DomainError('failed_precondition', `consumer group "${group}" is not registered on topic "${topic}"`);

/** How a dequeue, ack or nack is carried out once the consumer group rules (docs/consumer-groups-replay.md) were applied. */
export type Route = { kind: 'plain'; deadLetterGroup?: string } | { kind: 'group'; group: string };

interface MessageRef {
  id: string;
  topic: string;
  consumerGroup: string;
}

/**
 * Consumer-group (fan-out) delivery: which path a call takes (400 without a group on a fan-out topic, 422 for
 * a group the topic does not have) and the per-group dequeue, ack, nack and requeue. Transports never see it;
 * MessageService hands calls here.
 */
export class FanOut {
  constructor(
    private readonly db: Knex,
    private readonly catalog: Catalog,
  ) {}

  isFanOut(topic: string): boolean {
    return this.catalog.groupsOf(topic).length > 0;
  }

  /** The cache may lag another instance's registration by one refresh; a miss is confirmed in the database. */
  async isRegistered(topic: string, group: string): Promise<boolean> {
    return this.catalog.groupsOf(topic).includes(group) || (await isConsumerGroupRegistered(this.db, topic, group));
  }

  async dequeueRoute(topic: string, group: string | undefined): Promise<Route> {
    if (group === undefined || group === '') {
      if (this.isFanOut(topic)) throw groupRequired();
      return { kind: 'plain' };
    }
    assertConsumerGroupName(group);
    // Dead letters of a group are reachable with that group even after it was unregistered.
    if (isDlqTopic(topic)) return { kind: 'plain', deadLetterGroup: group };
    if (!(await this.isRegistered(topic, group))) throw notRegisteredGroup(group, topic);
    return { kind: 'group', group };
  }

  /**
   * Ack and nack by id: the group decides the path. Without one, messages of fan-out topics are refused
   * (400); with one, dead letters must carry that group and other messages need it registered on their topic.
   * Returns the ids per path; ids that cannot match are left out (the caller reports them not found).
   */
  async settleRoutes(ids: string[], group: string | undefined): Promise<{ plain: string[]; group: string[] }> {
    if (group === undefined || group === '') {
      if (!this.catalog.hasAnyGroups() || ids.length === 0) return { plain: ids, group: [] };
      const refs = await this.refs(ids);
      if (refs.some((r) => this.isFanOut(r.topic))) throw groupRequired();
      return { plain: ids, group: [] };
    }
    assertConsumerGroupName(group);
    const routes = { plain: [] as string[], group: [] as string[] };
    for (const ref of await this.refs(ids)) {
      if (isDlqTopic(ref.topic)) {
        if (ref.consumerGroup === group) routes.plain.push(ref.id);
        continue;
      }
      if (!(await this.isRegistered(ref.topic, group))) throw notRegisteredGroup(group, ref.topic);
      routes.group.push(ref.id);
    }
    return routes;
  }

  async dequeue(req: { topic: string; group: string; limit: number; now: number; visibleUntil: number; ratePerSecond?: number | null }): Promise<MessageRow[]> {
    return claimDeliveries(this.db, req);
  }

  releaseExpired(topic: string, group: string, rules: AttemptRules, error: string, now: number): Promise<AttemptResult[]> {
    return releaseExpiredDeliveries(this.db, topic, group, rules, error, this.settleContext(now));
  }

  ack(ids: string[], group: string, now: number) {
    return ackDeliveries(this.db, ids, group, this.settleContext(now));
  }

  /** Null when the group has no such delivery in processing: the caller may look again after a catch-up. */
  nack(id: string, group: string, error: string, rules: AttemptRules, now: number): Promise<AttemptResult | null> {
    return nackDelivery(this.db, id, group, error, rules, this.settleContext(now));
  }

  /**
   * Requeue of a dead letter whose original topic is fan-out: a group's dead letter goes back to that group
   * only while it is still registered, anything else to every registered group. Null: not a fan-out case.
   */
  async requeue(id: string, target: RequeueTarget): Promise<{ topic: string; outcome: Returned } | null | undefined> {
    const dead = await findDeadLetter(this.db, id);
    if (!dead) return null;
    const groups = this.catalog.groupsOf(dead.originalTopic);
    if (dead.consumerGroup && (await this.isRegistered(dead.originalTopic, dead.consumerGroup))) {
      return requeueToGroups(this.db, id, [dead.consumerGroup], false, target);
    }
    if (groups.length > 0) return requeueToGroups(this.db, id, groups, true, target);
    return undefined;
  }

  private settleContext(now: number) {
    return { replayable: (topic: string) => this.catalog.config(topic)?.replayable === true, now };
  }

  private async refs(ids: string[]): Promise<MessageRef[]> {
    const rows = await this.db('messages').select('id', 'topic', 'consumer_group').whereIn('id', ids);
    return rows.map((r: Record<string, unknown>) => ({ id: String(r.id), topic: String(r.topic), consumerGroup: String(r.consumer_group ?? '') }));
  }
}
