import { CreateQueueCommand, DeleteMessageBatchCommand, ReceiveMessageCommand, SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { Agent } from 'node:http';
import { expectStatus, type BenchClient } from './http-client.js';
import { makePayload, measured, type PhaseResult, type Processes } from './phases.js';

/**
 * The SQS-compatible API's phases (docs/sqs.md), through the AWS SDK for JavaScript v3 as a user's program
 * would call it, every request signed (SigV4) with an access key when auth is on:
 * - `SQS SendMessageBatch`: `concurrency` senders, batches of 10, `count` messages;
 * - `SQS ReceiveMessage(10) + DeleteMessageBatch`: `consumers` receivers draining them, each receive's messages
 *   deleted with one batch.
 */
export interface SqsOptions {
  port: number;
  count: number;
  deadlineMs: number;
  payloadBytes: number;
  concurrency: number;
  consumers: number;
  /** With auth on: signs in as the bench admin (BenchToken) to create an access key. */
  authOn: boolean;
}

const QUEUE = 'bench-sqs';
const BATCH = 10;

/** An access key of the signed-in bench admin, made through the HTTP API (auth on), or any pair (auth off). */
async function credentialsOf(client: BenchClient, authOn: boolean): Promise<{ accessKeyId: string; secretAccessKey: string }> {
  if (!authOn) return { accessKeyId: 'bench', secretAccessKey: 'bench' };
  const status = JSON.parse(expectStatus(await client.get('/api/auth/status'), 200, 'auth status').body) as { user: { id: string } };
  const key = JSON.parse(expectStatus(await client.post(`/api/users/${status.user.id}/access-keys`, {}), 201, 'create access key').body) as { access_key_id: string; secret: string };
  return { accessKeyId: key.access_key_id, secretAccessKey: key.secret };
}

export async function sqsPhases(client: BenchClient, procs: Processes, o: SqsOptions, report: (r: PhaseResult) => void): Promise<void> {
  const endpoint = `http://127.0.0.1:${o.port}`;
  const agent = new Agent({ keepAlive: true, maxSockets: Math.max(o.concurrency, o.consumers) });
  const sqs = new SQSClient({ endpoint, region: 'us-east-1', credentials: await credentialsOf(client, o.authOn), requestHandler: { httpAgent: agent } });
  try {
    const QueueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: QUEUE }))).QueueUrl!;
    const payloads = Array.from({ length: 16 }, (_, i) => makePayload(o.payloadBytes, i));

    const sent = await measured('SQS SendMessageBatch', procs, async (recorder) => {
      const latency = recorder('send-batch');
      const deadline = performance.now() + o.deadlineMs;
      let issued = 0;
      let stored = 0;
      const sender = async () => {
        while (issued < o.count && performance.now() < deadline) {
          const first = issued;
          const n = Math.min(BATCH, o.count - first);
          issued += n;
          const Entries = Array.from({ length: n }, (_, i) => ({ Id: String(i), MessageBody: payloads[(first + i) % payloads.length] }));
          const out = await latency.time(() => sqs.send(new SendMessageBatchCommand({ QueueUrl, Entries })));
          if (out.Failed?.length) throw new Error(`SendMessageBatch: ${out.Failed.length} entries failed (${out.Failed[0].Code})`);
          stored += n;
        }
      };
      await Promise.all(Array.from({ length: o.concurrency }, sender));
      return stored;
    });
    report(sent);

    report(
      await measured('SQS ReceiveMessage(10) + DeleteMessageBatch', procs, async (recorder) => {
        const receiveLatency = recorder('receive');
        const deleteLatency = recorder('delete-batch');
        const deadline = performance.now() + o.deadlineMs;
        let deleted = 0;
        const receiver = async () => {
          while (deleted < sent.messages && performance.now() < deadline) {
            const { Messages = [] } = await receiveLatency.time(() => sqs.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: BATCH, VisibilityTimeout: 60 })));
            if (Messages.length === 0) return;
            const Entries = Messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle }));
            const out = await deleteLatency.time(() => sqs.send(new DeleteMessageBatchCommand({ QueueUrl, Entries })));
            if (out.Failed?.length) throw new Error(`DeleteMessageBatch: ${out.Failed.length} entries failed (${out.Failed[0].Code})`);
            deleted += Messages.length;
          }
        };
        await Promise.all(Array.from({ length: o.consumers }, receiver));
        return deleted;
      }),
    );
  } finally {
    sqs.destroy();
    agent.destroy();
  }
}
