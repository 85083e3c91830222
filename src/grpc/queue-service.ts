import { status as Status, type Metadata, type ServerUnaryCall, type ServerWritableStream, type UntypedServiceImplementation } from '@grpc/grpc-js';
import type { UpDownCounter } from '@opentelemetry/api';
import { PRINCIPAL_CACHE_MS } from '../auth/authorizer.js';
import type { Principal } from '../auth/principal.js';
import type { Logger } from '../log/logger.js';
import type { HistogramSeries, TallyHistogram } from '../metrics/tallies.js';
import type { MessageService } from '../queue/messages.js';
import type { SubscriptionHub } from '../queue/subscriptions.js';
import type { Access, CallGuard } from './auth.js';
import { DomainError, notFound } from '../queue/errors.js';
import type { HeldAckCaller } from '../queue/held-ack-batch.js';
import { assertTopicName } from '../queue/topic-names.js';
import { codeName, grpcError, toGrpcError, type GrpcError } from './errors.js';
import { isMalformed, malformedReason, type MalformedRequest } from './malformed.js';
import {
  dequeueResponse,
  groupOf,
  timestamp,
  toEnqueueInput,
  type AckBatchRequest,
  type AckRequest,
  type BatchDequeueRequest,
  type DequeueRequest,
  type EnqueueBatchRequest,
  type EnqueueRequest,
  type NackRequest,
  type ChangeVisibilityRequest,
  type SubscribeRequest,
} from './messages.js';
import { StreamQuota } from './stream-quota.js';
import { waitingCall } from './waiting-call.js';
import type { Message } from '../queue/message.js';
import { DeliveryTracker, maxInFlightOf, SubscribeStream, type SettledRelay } from './subscribe.js';
import { endCall, traceCall } from './tracing.js';
import type { RequestTrace, Tracing } from '../tracing/tracing.js';
import { traceDelivery, traceReceive, traceSend, traceSettle } from '../tracing/message-spans.js';

export interface QueueServiceDeps {
  logger: Logger;
  messages: MessageService;
  guard: CallGuard;
  /** Other instances, when Redis connects them: Acks there free slots of streams here and vice versa. */
  peers?: SettledRelay;
  /** server.subscribe_streams_per_user: open Subscribe streams per principal (auth off: per connection). */
  subscribeStreamsPerUser: number;
  duration: TallyHistogram;
  streams: UpDownCounter;
  /** Set when tracing is on: spans of calls and messages. */
  tracing?: Tracing;
}

/** `trace`: the call's span and context, with tracing on. */
type Unary<Req> = (request: Req, metadata: Metadata, call: ServerUnaryCall<Req, unknown>, trace: RequestTrace | undefined) => Promise<object>;
/** The handler checks access itself (Ack: on the topic of the delivery it settles, src/grpc/subscribe.ts). */
const BY_HANDLER = 'by handler';

/** The transport of QueueService: each RPC checks access, calls the domain and shapes the reply; no rules here. */
export class QueueServiceHandlers {
  private readonly deliveries: DeliveryTracker;
  /** One claim per topic, group and visibility timeout for all of this instance's streams. */
  private readonly hub: SubscriptionHub;
  private readonly active = new Set<SubscribeStream>();
  private readonly subscribeQuota: StreamQuota;
  /** Per method, its duration series by status code: found without building a key per call. */
  private readonly durationSeries = new Map<string, HistogramSeries[]>();
  private closing = false;

  constructor(private readonly deps: QueueServiceDeps) {
    this.deliveries = new DeliveryTracker(deps.peers);
    this.hub = deps.messages.subscriptions;
    this.subscribeQuota = new StreamQuota(deps.subscribeStreamsPerUser);
  }

  implementation(): UntypedServiceImplementation {
    const { messages } = this.deps;
    return {
      Enqueue: this.unary<EnqueueRequest>('Enqueue', (r) => ({ action: 'produce', topic: r.topic }), (r, _m, _c, trace) => {
        const input = toEnqueueInput(r);
        return trace ? traceSend(trace, [input], () => messages.enqueue(input), (e) => [e.id]) : messages.enqueue(input);
      }),
      EnqueueBatch: this.unary<EnqueueBatchRequest>(
        'EnqueueBatch',
        // Every distinct topic of the batch is checked; the first one refused refuses the batch.
        (r) => [...new Set(r.requests.map((m) => m.topic))].map((topic) => ({ action: 'produce', topic })),
        async (r, _m, _c, trace) => {
          const inputs = r.requests.map(toEnqueueInput);
          const enqueue = () => messages.enqueueBatch(inputs, 'requests');
          return trace ? traceSend(trace, inputs, enqueue, (e) => e.ids) : enqueue();
        },
      ),
      Dequeue: this.unary<DequeueRequest>('Dequeue', consume, async (r, metadata, call, trace) => {
        const [message] = await this.dequeue(r, 1, metadata, call, trace, false);
        // A unary Dequeue has no empty reply, so an empty topic is NOT_FOUND.
        if (!message) throw notFound('no messages available');
        return dequeueResponse(message);
      }),
      BatchDequeue: this.unary<BatchDequeueRequest>('BatchDequeue', consume, async (r, metadata, call, trace) => ({
        messages: (await this.dequeue(r, r.count, metadata, call, trace, true)).map(dequeueResponse),
      })),
      // A delivery stops counting against its stream's window when its Ack or Nack arrives (once authorised),
      // not when the settle has committed: the consumer is done with it either way (an ack that then fails
      // leaves the message `processing`, back through the visibility timeout), and the stream's next claim
      // overlaps the commit instead of waiting a round of group commit for it.
      Ack: this.unary<AckRequest>('Ack', BY_HANDLER, (r, metadata, _c, trace) =>
        trace ? traceSettle(trace, 'ack', [r.id], groupOf(r), () => this.ack(r, metadata)) : this.ack(r, metadata),
      ),
      Nack: this.unary<NackRequest>('Nack', (r) => settle([r.id], r), async (r, _m, _c, trace) => {
        this.deliveries.release(groupOf(r), [r.id]);
        const nack = () => messages.nack(r.id, r.error, groupOf(r), r.delay_seconds);
        await (trace ? traceSettle(trace, 'nack', [r.id], groupOf(r), nack, (outcome) => ({ 'conveyor.nack.outcome': outcome })) : nack());
        return {};
      }),
      AckBatch: this.unary<AckBatchRequest>('AckBatch', BY_HANDLER, (r, metadata, _c, trace) =>
        trace ? traceSettle(trace, 'ack', r.ids, groupOf(r), () => this.ackBatch(r, metadata)) : this.ackBatch(r, metadata),
      ),
      ChangeVisibility: this.unary<ChangeVisibilityRequest>('ChangeVisibility', (r) => settle([r.id], r), async (r) => {
        const { availableAt } = await messages.changeVisibility(r.id, r.visibility_timeout_seconds, groupOf(r));
        // Given back (0), the delivery no longer counts against its Subscribe stream's window.
        if (r.visibility_timeout_seconds === 0) this.deliveries.release(groupOf(r), [r.id]);
        return { available_at: timestamp(availableAt) };
      }),
      Subscribe: (call: ServerWritableStream<SubscribeRequest, unknown>) => void (this.deps.tracing ? this.tracedSubscribe(this.deps.tracing, call) : this.subscribe(call)),
    };
  }

  /**
   * Graceful shutdown: every open stream ends with UNAVAILABLE instead of holding the server open, and so does
   * one still being authorised now, once it is.
   */
  endStreams(): void {
    this.closing = true;
    for (const stream of this.active) stream.shutdown();
  }

  /**
   * Dequeue and BatchDequeue, waiting up to wait_seconds for a message (long polling). A call cancelled (or
   * past its deadline) while a claim ran gets no answer: what it took goes back.
   */
  private dequeue(r: DequeueRequest, count: number, metadata: Metadata, call: ServerUnaryCall<DequeueRequest, unknown>, trace: RequestTrace | undefined, batch: boolean): Promise<Message[]> {
    const input = dequeueInput(r, count);
    const dequeue = () =>
      r.wait_seconds
        ? this.deps.messages.dequeueWaiting(input, r.wait_seconds, waitingCall(call, () => this.authorize(metadata, consume(r))))
        : this.deps.messages.dequeueFor(input, () => call.cancelled);
    return trace ? traceReceive(trace, { topic: r.topic, group: input.consumerGroup, batch }, dequeue) : dequeue();
  }

  private unary<Req>(method: string, access: ((request: Req) => Access | Access[]) | typeof BY_HANDLER, handle: Unary<Req>) {
    return (call: ServerUnaryCall<Req, unknown>, callback: (error: GrpcError | null, response?: object) => void) => {
      const started = performance.now();
      // One check per call: with tracing off, no span and no metadata read.
      const trace = this.deps.tracing ? traceCall(this.deps.tracing, method, call.metadata) : undefined;
      const respond = (error: GrpcError | null, response?: object) => {
        this.record(method, error?.code ?? Status.OK, started);
        if (trace) endCall(trace, error?.code ?? Status.OK);
        callback(error, response);
      };
      if (isMalformed(call.request)) return respond(malformed(call.request));
      const run = () =>
        access === BY_HANDLER
          ? handle(call.request, call.metadata, call, trace)
          : this.authorize(call.metadata, access(call.request)).then(() => handle(call.request, call.metadata, call, trace));
      (trace ? trace.run(run) : run())
        .then(
          (response) => respond(null, response),
          (err) => respond(this.toError(err, method)),
        );
    };
  }

  /** A Subscribe stream with its server span: the stream's lifetime, ended with its status. */
  private async tracedSubscribe(tracing: Tracing, call: ServerWritableStream<SubscribeRequest, unknown>): Promise<void> {
    const trace = traceCall(tracing, 'Subscribe', call.metadata);
    let code: Status = Status.OK;
    call.once('error', (err: GrpcError) => (code = err.code));
    call.once('cancelled', () => (code = Status.CANCELLED));
    try {
      await trace.run(() => this.subscribe(call));
    } finally {
      endCall(trace, code);
    }
  }

  private async subscribe(call: ServerWritableStream<SubscribeRequest, unknown>): Promise<void> {
    const started = performance.now();
    const request = call.request;
    const invalidRequest = this.invalidSubscribe(request);
    if (invalidRequest) {
      this.record('Subscribe', invalidRequest.code, started);
      return void call.emit('error', invalidRequest);
    }
    const maxInFlight = maxInFlightOf(request) as number;
    const group = groupOf(request);
    let code: Status = Status.OK;
    call.once('error', (err: GrpcError) => (code = err.code));
    call.once('cancelled', () => (code = Status.CANCELLED));
    const access: Access = { action: 'consume', topic: request.topic, group };
    let principal: Principal | null;
    try {
      principal = await this.authorize(call.metadata, access);
    } catch (err) {
      const error = this.toError(err, 'Subscribe');
      this.record('Subscribe', error.code, started);
      return void call.emit('error', error);
    }
    // Without auth there is no user to count for, so the connection (its address and port) is the owner.
    const release = this.subscribeQuota.take(principal ? `user:${principal.userId}` : `connection:${call.getPeer()}`);
    if (!release) {
      const owner = principal ? 'this user has' : 'this connection has';
      const error = grpcError(Status.RESOURCE_EXHAUSTED, `${owner} ${this.subscribeQuota.max} open Subscribe streams, the most allowed (server.subscribe_streams_per_user); close one first`);
      this.record('Subscribe', error.code, started);
      return void call.emit('error', error);
    }
    const stream = new SubscribeStream(call, request.visibility_timeout_seconds, this.deps.messages.visibilitySecondsOf(request.topic), group, maxInFlight, {
      hub: this.hub,
      deliveries: this.deliveries,
      streams: this.deps.streams,
      toError: (err) => this.toError(err, 'Subscribe'),
      delivered: this.deps.tracing ? deliveredTo(this.deps.tracing) : undefined,
    });
    if (this.closing) stream.shutdown();
    this.active.add(stream);
    const recheck = principal ? this.recheckWhileOpen(call.metadata, access, stream) : undefined;
    try {
      await stream.run();
    } finally {
      clearInterval(recheck);
      release();
      this.active.delete(stream);
      this.record('Subscribe', code, started);
    }
  }

  /**
   * A stream is one call that may last for days: its token and its user's grants are checked again as often
   * as a cached user may be stale (the bound every request keeps), so a deleted user, a removed grant or an
   * expired token ends it (UNAUTHENTICATED, PERMISSION_DENIED) as they would refuse the next unary call. A
   * check that fails for another reason (the database away) leaves the stream open; the next one decides.
   */
  private recheckWhileOpen(metadata: Metadata, access: Access, stream: SubscribeStream): NodeJS.Timeout {
    const timer = setInterval(() => {
      this.authorize(metadata, access).catch((err) => {
        if (err instanceof DomainError && (err.code === 'unauthenticated' || err.code === 'forbidden')) stream.fail(err);
      });
    }, PRINCIPAL_CACHE_MS);
    return timer.unref();
  }

  /**
   * An Ack of a delivery that a stream of this instance holds, or of a message a group-less Dequeue of this
   * instance handed out, takes MessageService.ackHeld: checked against that stream's (the dequeue's) topic,
   * settled only while the message is on it. Whatever that way does not settle, and every other Ack, goes the
   * ordinary way: the grant on the topic read from the message, then the ack, with their usual answers.
   */
  private async ack(r: AckRequest, metadata: Metadata): Promise<object> {
    const group = groupOf(r);
    let released = false;
    const caller = this.heldAckCaller(metadata, group);
    const release = (ids: string[]) => {
      released = true;
      caller.release(ids);
    };
    if (await this.deps.messages.ackHeld(r.id, group, { ...caller, release })) return {};
    await this.authorize(metadata, settle([r.id], r));
    // Not twice: a second release would tell the peers about a delivery none of them holds.
    if (!released) caller.release([r.id]);
    await this.deps.messages.ack(r.id, group);
    return {};
  }

  /**
   * AckBatch the way of Ack: the deliveries this instance holds are settled without reading their topics, the
   * rest the ordinary way first (MessageService.ackBatchHeld); every call needs a valid token.
   */
  private async ackBatch(r: AckBatchRequest, metadata: Metadata): Promise<object> {
    const group = groupOf(r);
    const { acked, notFound } = await this.deps.messages.ackBatchHeld(r.ids, group, {
      ...this.heldAckCaller(metadata, group),
      authorize: async (ids) => void (await this.authorize(metadata, settle(ids, r))),
    });
    return { acked, not_found: notFound };
  }

  /** For MessageService.ackHeld and ackBatchHeld: this instance's Subscribe streams, and the caller's grants. */
  private heldAckCaller(metadata: Metadata, group: string | undefined): Required<HeldAckCaller> {
    return {
      heldTopicOf: (id) => this.deliveries.topicOf(undefined, id),
      mayConsume: (topic) => this.mayConsume(metadata, topic),
      release: (ids) => this.deliveries.release(group, ids),
    };
  }

  /** Whether the caller may consume `topic` without a group; other refusals (no valid token) throw. */
  private async mayConsume(metadata: Metadata, topic: string): Promise<boolean> {
    try {
      await this.authorize(metadata, { action: 'consume', topic });
      return true;
    } catch (err) {
      if (err instanceof DomainError && err.code === 'forbidden') return false;
      throw err;
    }
  }

  /**
   * What is wrong with a Subscribe request, checked before anything is counted or authorised: the
   * open-streams gauge is labelled by topic, and a stream of a name no topic can have would leave a series
   * behind.
   */
  private invalidSubscribe(request: SubscribeRequest | MalformedRequest): GrpcError | undefined {
    if (isMalformed(request)) return malformed(request);
    try {
      assertTopicName(request.topic);
    } catch (err) {
      return this.toError(err, 'Subscribe');
    }
    const maxInFlight = maxInFlightOf(request);
    return typeof maxInFlight === 'string' ? grpcError(Status.INVALID_ARGUMENT, maxInFlight) : undefined;
  }

  /**
   * The answer to a call refused before its request was read (authenticate-first.ts: no valid token), recorded
   * like every other answer.
   */
  refused(method: string, err: unknown, started: number): GrpcError {
    const error = this.toError(err, method);
    this.record(method, error.code, started);
    return error;
  }

  private authorize(metadata: Metadata, access: Access | Access[]): Promise<Principal | null> {
    return this.deps.guard(metadata, Array.isArray(access) ? access : [access]);
  }

  /** `method` names the call in the log line of what the answer hides, as HTTP's names the route. */
  private toError(err: unknown, method: string): GrpcError {
    return toGrpcError(err, (cause, what, level) => this.deps.logger[level]({ err: cause, method }, what));
  }

  private record(method: string, code: Status, started: number): void {
    let byCode = this.durationSeries.get(method);
    if (!byCode) this.durationSeries.set(method, (byCode = []));
    const series = (byCode[code] ??= this.deps.duration.of(`${method} ${code}`, () => ({ method, code: codeName(code) })));
    series.record((performance.now() - started) / 1000);
  }
}

/** A Subscribe push's receive span (src/tracing/message-spans.ts says why it is a trace of its own). */
const deliveredTo = (tracing: Tracing) => (topic: string, group: string | undefined, messages: Message[]) => traceDelivery(tracing, { topic, group, batch: false }, messages);

const malformed = (request: MalformedRequest) => grpcError(Status.INVALID_ARGUMENT, malformedReason(request));

const consume = (r: DequeueRequest): Access => ({ action: 'consume', topic: r.topic, group: groupOf(r) });
const settle = (ids: string[], r: { consumer_group: string }): Access => ({ action: 'settle', ids, group: groupOf(r) });

function dequeueInput(r: DequeueRequest, count: number) {
  return { topic: r.topic, count, visibilityTimeoutSeconds: r.visibility_timeout_seconds, consumerGroup: groupOf(r) };
}
