import type { ServerUnaryCall } from '@grpc/grpc-js';
import type { WaitingCaller } from '../queue/long-poll.js';

/**
 * The caller of a long-polling Dequeue or BatchDequeue: gone once the call is cancelled (by the client, or
 * past its deadline), and authorised again with `authorize` before a claim that follows a wait.
 */
export function waitingCall(call: ServerUnaryCall<unknown, unknown>, authorize: () => Promise<unknown>): WaitingCaller {
  const controller = new AbortController();
  if (call.cancelled) controller.abort();
  else call.once('cancelled', () => controller.abort());
  return { cancelled: controller.signal, reauthorize: async () => void (await authorize()) };
}
