import type { Config } from '../config/schema.js';
import { assertDeadLetterTarget, type QueueService } from '../queue/queues.js';
import type { TopicConfigInput } from '../queue/topics.js';
import type { TopicConfigRow } from '../store/topic-configs.js';
import { SqsError } from './errors.js';
import { queueOfArn, type QueueUrls } from './queue-urls.js';

/**
 * Queue attributes on topic configuration: DelaySeconds is delivery_delay_seconds, MessageRetentionPeriod
 * message_ttl_seconds, a RedrivePolicy's maxReceiveCount max_retries (its target can only be the queue's own
 * `<queue>.dlq`), VisibilityTimeout visibility_timeout_seconds, ReceiveMessageWaitTimeSeconds
 * receive_wait_seconds, ContentBasedDeduplication content_based_deduplication. The rest are read from the queue: counts, times, its ARN, whether it is FIFO.
 */
export const SETTABLE = ['DelaySeconds', 'MessageRetentionPeriod', 'RedrivePolicy', 'VisibilityTimeout', 'MaximumMessageSize', 'ReceiveMessageWaitTimeSeconds', 'FifoQueue', 'ContentBasedDeduplication'] as const;
export const READ_ONLY = [
  'ApproximateNumberOfMessages',
  'ApproximateNumberOfMessagesNotVisible',
  'ApproximateNumberOfMessagesDelayed',
  'CreatedTimestamp',
  'LastModifiedTimestamp',
  'QueueArn',
] as const;
const ALL: readonly string[] = [...SETTABLE, ...READ_ONLY];

const invalidAttribute = (message: string) => new SqsError('InvalidAttributeValue', message);

function integer(name: string, value: string, min: number, max: number): number {
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) throw invalidAttribute(`Invalid value for the parameter ${name}: expected an integer from ${min} to ${max}.`);
  return Number(value);
}

/**
 * The topic settings that attributes set (those it does not name are left out); `created` says whether this
 * is CreateQueue, where FifoQueue may be given (it must match the name).
 */
export function settingsOf(queue: string, attributes: Record<string, string>, config: Config, accountId: string, created: boolean): TopicConfigInput {
  const settings: TopicConfigInput = {};
  const fifo = queue.endsWith('.fifo');
  for (const [name, value] of Object.entries(attributes)) {
    if (typeof value !== 'string') throw invalidAttribute(`Invalid value for the parameter ${name}.`);
    switch (name) {
      case 'DelaySeconds':
        settings.delivery_delay_seconds = integer(name, value, 0, Math.min(900, config.queue.max_delay_seconds)) || null;
        break;
      case 'MessageRetentionPeriod':
        settings.message_ttl_seconds = integer(name, value, 60, 1_209_600);
        break;
      case 'RedrivePolicy': {
        if (value === '') {
          settings.max_retries = null;
          break;
        }
        let policy: { deadLetterTargetArn?: unknown; maxReceiveCount?: unknown };
        try {
          policy = JSON.parse(value) as typeof policy;
        } catch {
          throw invalidAttribute('Invalid value for the parameter RedrivePolicy: not JSON.');
        }
        const target = queueOfArn(policy?.deadLetterTargetArn, accountId);
        if (target === null) throw invalidAttribute('Invalid value for the parameter RedrivePolicy: deadLetterTargetArn must be the ARN of a queue of this account.');
        try {
          assertDeadLetterTarget(queue, target);
        } catch (err) {
          throw invalidAttribute(`Invalid value for the parameter RedrivePolicy: ${(err as Error).message}.`);
        }
        settings.max_retries = integer('RedrivePolicy maxReceiveCount', String(policy.maxReceiveCount), 1, 1000);
        break;
      }
      case 'VisibilityTimeout':
        // A claim lasts at least a second (as ReceiveMessage's VisibilityTimeout 0): 0 is kept as 1.
        settings.visibility_timeout_seconds = Math.max(1, integer(name, value, 0, 43_200));
        break;
      case 'MaximumMessageSize':
        integer(name, value, 1024, config.queue.max_payload_bytes);
        break;
      case 'ReceiveMessageWaitTimeSeconds':
        settings.receive_wait_seconds = integer(name, value, 0, 20);
        break;
      case 'FifoQueue':
        if (!created) throw invalidAttribute('FifoQueue can only be set when the queue is created.');
        if ((value === 'true') !== fifo) throw invalidAttribute(fifo ? 'a queue whose name ends in .fifo is a FIFO queue: FifoQueue must be true.' : 'a FIFO queue name must end in .fifo.');
        break;
      case 'ContentBasedDeduplication':
        if (!fifo) throw invalidAttribute('ContentBasedDeduplication is only valid for FIFO queues.');
        if (value !== 'true' && value !== 'false') throw invalidAttribute('Invalid value for the parameter ContentBasedDeduplication: true or false.');
        settings.content_based_deduplication = value === 'true';
        break;
      default:
        throw new SqsError('InvalidAttributeName', `Unknown Attribute ${name}.`);
    }
  }
  return settings;
}

/** The attributes GetQueueAttributes asks for (`All` for every one). */
export async function readAttributes(queue: string, names: string[] | undefined, row: TopicConfigRow | undefined, queues: QueueService, urls: QueueUrls, config: Config): Promise<Record<string, string>> {
  const wanted = !names || names.length === 0 ? [] : names.includes('All') ? ALL : names;
  for (const name of wanted) if (!ALL.includes(name)) throw new SqsError('InvalidAttributeName', `Unknown Attribute ${name}.`);
  const out: Record<string, string> = {};
  if (wanted.length === 0) return out;
  const needsCounts = wanted.some((n) => n.startsWith('ApproximateNumber'));
  const counts = needsCounts ? await queues.counts(queue) : undefined;
  const createdAt = wanted.includes('CreatedTimestamp') ? await queues.createdAt(queue) : null;
  const fifo = queue.endsWith('.fifo');
  for (const name of wanted) {
    switch (name) {
      case 'DelaySeconds':
        out[name] = String(row?.delivery_delay_seconds ?? 0);
        break;
      case 'MessageRetentionPeriod':
        out[name] = String(row?.message_ttl_seconds ?? config.queue.message_ttl);
        break;
      case 'RedrivePolicy':
        if (row?.max_retries != null) out[name] = JSON.stringify({ deadLetterTargetArn: urls.arnOf(`${queue}.dlq`), maxReceiveCount: row.max_retries });
        break;
      case 'VisibilityTimeout':
        out[name] = String(row?.visibility_timeout_seconds ?? config.queue.visibility_timeout);
        break;
      case 'MaximumMessageSize':
        out[name] = String(config.queue.max_payload_bytes);
        break;
      case 'ReceiveMessageWaitTimeSeconds':
        out[name] = String(row?.receive_wait_seconds ?? 0);
        break;
      case 'FifoQueue':
        if (fifo) out[name] = 'true';
        break;
      case 'ContentBasedDeduplication':
        // Null (a topic configured through the HTTP API or the controller): on, as before the setting existed.
        if (fifo) out[name] = String(row?.content_based_deduplication ?? true);
        break;
      case 'ApproximateNumberOfMessages':
        out[name] = String(counts!.visible);
        break;
      case 'ApproximateNumberOfMessagesNotVisible':
        out[name] = String(counts!.inFlight);
        break;
      case 'ApproximateNumberOfMessagesDelayed':
        out[name] = String(counts!.delayed);
        break;
      case 'CreatedTimestamp':
        out[name] = String(Math.floor((createdAt ?? row?.updated_at ?? 0) / 1000));
        break;
      case 'LastModifiedTimestamp':
        out[name] = String(Math.floor((row?.updated_at ?? 0) / 1000));
        break;
      case 'QueueArn':
        out[name] = urls.arnOf(queue);
        break;
    }
  }
  return out;
}
