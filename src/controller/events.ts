import { createHash } from 'node:crypto';
import type { CoreV1Event } from '@kubernetes/client-node';
import type { Logger } from '../log/logger.js';
import { COMPONENT, describeKubeError, isConflict, mergePatch, type KubeClients, type KubeObject } from './kube.js';

export type EventType = 'Normal' | 'Warning';

const AGGREGATION_WINDOW_MS = 10 * 60_000;

/**
 * Kubernetes Events on the custom resources, aggregated like client-go's recorder: the same reason and
 * message on the same object within ten minutes raises the count of one Event instead of adding another.
 * Failing to record an event never fails a reconcile.
 */
export class EventRecorder {
  private readonly recent = new Map<string, { name: string; count: number; at: number }>();

  constructor(
    private readonly clients: KubeClients,
    private readonly instance: string,
    private readonly logger: Logger,
  ) {}

  async record(obj: KubeObject, type: EventType, reason: string, message: string): Promise<void> {
    const namespace = obj.metadata.namespace ?? 'default';
    const identity = `${obj.metadata.uid}|${type}|${reason}|${message}`;
    const now = new Date();
    const seen = this.recent.get(identity);
    try {
      if (seen && now.getTime() - seen.at < AGGREGATION_WINDOW_MS) {
        seen.count++;
        seen.at = now.getTime();
        await this.clients.core.patchNamespacedEvent({ name: seen.name, namespace, body: { count: seen.count, lastTimestamp: now } }, mergePatch);
        return;
      }
      const name = `${obj.metadata.name}.${createHash('sha256').update(`${identity}|${now.getTime()}`).digest('hex').slice(0, 16)}`;
      const event: CoreV1Event = {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name, namespace },
        involvedObject: { apiVersion: obj.apiVersion, kind: obj.kind, name: obj.metadata.name, namespace, uid: obj.metadata.uid, resourceVersion: obj.metadata.resourceVersion },
        type,
        reason,
        message: message.slice(0, 1024),
        count: 1,
        firstTimestamp: now,
        lastTimestamp: now,
        source: { component: COMPONENT },
        reportingComponent: COMPONENT,
        reportingInstance: this.instance,
      };
      await this.clients.core.createNamespacedEvent({ namespace, body: event });
      this.remember(identity, { name, count: 1, at: now.getTime() });
    } catch (err) {
      if (isConflict(err)) return;
      this.recent.delete(identity);
      this.logger.warn({ reason: describeKubeError(err), event: reason }, 'could not record a Kubernetes event');
    }
  }

  private remember(identity: string, entry: { name: string; count: number; at: number }): void {
    this.recent.set(identity, entry);
    if (this.recent.size <= 4096) return;
    const cutoff = Date.now() - AGGREGATION_WINDOW_MS;
    for (const [key, value] of this.recent) if (value.at < cutoff) this.recent.delete(key);
  }
}
