import type { IncomingMessage } from 'node:http';
import { isValidTopicName } from '../queue/topic-names.js';
import { SqsError } from './errors.js';

/**
 * Queue URLs: `<scheme>://<host>/<account id>/<queue name>`, with the scheme and host the request came to,
 * so that a client reaches the queue the way it reached the service. A URL is read by its path only (a
 * client behind a proxy may know another host), whose account must be this service's.
 */
export interface QueueUrls {
  urlOf(queue: string): string;
  arnOf(queue: string): string;
  /** The queue a URL names; QueueDoesNotExist for another account or a name no queue can have. */
  queueOf(url: unknown): string;
}

export function queueUrls(req: IncomingMessage & { protocol?: string }, accountId: string, region: string): QueueUrls {
  const forwarded = req.headers['x-forwarded-proto'];
  const scheme = typeof forwarded === 'string' && /^https?$/.test(forwarded) ? forwarded : (req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http';
  const host = req.headers.host ?? 'localhost';
  return {
    urlOf: (queue) => `${scheme}://${host}/${accountId}/${queue}`,
    arnOf: (queue) => `arn:aws:sqs:${region}:${accountId}:${queue}`,
    queueOf: (url) => {
      if (typeof url !== 'string' || url === '') throw new SqsError('MissingParameter', 'The request must contain the parameter QueueUrl.');
      let path: string;
      try {
        path = /^[a-z]+:\/\//i.test(url) ? new URL(url).pathname : url;
      } catch {
        throw new SqsError('InvalidAddress', 'The address is not valid for this endpoint.');
      }
      const parts = path.split('/').filter((p) => p !== '');
      const [account, queue] = parts.length === 2 ? parts : [accountId, parts[0]];
      if (account !== accountId || parts.length > 2 || !isValidTopicName(queue)) throw new SqsError('QueueDoesNotExist', 'The specified queue does not exist.');
      return queue;
    },
  };
}

/** The queue named by an ARN of this account (a redrive policy's target), or null. */
export function queueOfArn(arn: unknown, accountId: string): string | null {
  if (typeof arn !== 'string') return null;
  const match = /^arn:aws:sqs:[^:]*:(\d{12}):([^:]+)$/.exec(arn);
  return match && match[1] === accountId ? match[2] : null;
}
