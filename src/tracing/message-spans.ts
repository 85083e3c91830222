import { context, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Link, type Span } from '@opentelemetry/api';
import type { Message } from '../queue/message.js';
import type { EnqueueInput } from '../queue/messages.js';
import { assertConsumerGroupName } from '../queue/consumer-group-names.js';
import { normaliseMessageId } from '../queue/message-ids.js';
import { isValidTopicName } from '../queue/topic-names.js';
import { traceCarrierOf, TRACEPARENT_KEY, TRACESTATE_KEY } from './trace-metadata.js';
import { errorTypeOf, type RequestTrace, type Tracing } from './tracing.js';

/**
 * The messaging spans of the OpenTelemetry semantic conventions, as a broker sees them: `send` per message
 * enqueued, `receive` per delivery (a dequeue, a push to a Subscribe stream), `ack` and `nack` (settle) per
 * settling call; the transports call these around the domain's work. Attributes name topics, groups, ids and
 * counts, never a payload, a key or a metadata value.
 */

const SYSTEM = 'conveyor';

function destination(topic: unknown): string | undefined {
  return isValidTopicName(topic) ? topic : undefined;
}

/** A group's name as an attribute only when it is one (the body may not have been checked yet). */
function groupName(group: string | undefined): string | undefined {
  try {
    return group === undefined ? undefined : assertConsumerGroupName(group);
  } catch {
    return undefined;
  }
}

function spanName(operation: string, topic: string | undefined): string {
  return topic === undefined ? operation : `${operation} ${topic}`;
}

function fail(span: Span, err: unknown): void {
  span.setAttribute('error.type', errorTypeOf(err));
  span.setStatus({ code: SpanStatusCode.ERROR });
}

/** A link to the `send` span of a message, read from its stored traceparent. */
function linkTo(tracing: Tracing, carrier: Parameters<Tracing['extract']>[0], messageId: string): Link | undefined {
  const extracted = tracing.extract(carrier);
  const spanContext = extracted && trace.getSpanContext(extracted);
  return spanContext ? { context: spanContext, attributes: { 'messaging.message.id': messageId } } : undefined;
}

/**
 * One `send` span per message, each the child of its producer's context: the message's own traceparent
 * (metadata), else the caller's (a header), else the request's server span. Each message then carries its
 * span's context in its metadata (trace-metadata.ts), when it has a producer context or its span is sampled:
 * a message from a producer that does not trace is not given a context nobody records.
 */
export async function traceSend<T>(request: RequestTrace, inputs: EnqueueInput[], work: () => Promise<T>, idsOf: (result: T) => string[]): Promise<T> {
  const { tracing } = request;
  const fallback = request.caller ?? request.context;
  const spans = inputs.map((input) => {
    const own = input.metadata === undefined ? undefined : tracing.extract(traceCarrierOf(input.metadata));
    const topic = destination(input.topic);
    const attributes: Attributes = {
      'messaging.system': SYSTEM,
      'messaging.operation.type': 'send',
      'messaging.operation.name': 'send',
      'messaging.message.body.size': input.payload.length,
    };
    if (topic !== undefined) attributes['messaging.destination.name'] = topic;
    if (inputs.length > 1) attributes['messaging.batch.message_count'] = inputs.length;
    const span = tracing.tracer.startSpan(spanName('send', topic), { kind: SpanKind.PRODUCER, attributes }, own ?? fallback);
    if (own !== undefined || request.caller !== undefined || span.isRecording()) {
      // A copy, so the caller's object stays as given; the span inherited the producer's tracestate, if any.
      const metadata = { ...input.metadata };
      delete metadata[TRACEPARENT_KEY];
      delete metadata[TRACESTATE_KEY];
      input.metadata = Object.assign(metadata, tracing.inject(span));
    }
    return span;
  });
  // One message: its statements (the group commit's INSERT, when this call starts it) nest under its span.
  const runIn: Context = spans.length === 1 ? trace.setSpan(request.context, spans[0]) : request.context;
  try {
    const result = await context.with(runIn, work);
    const ids = idsOf(result);
    spans.forEach((span, i) => ids[i] !== undefined && span.setAttribute('messaging.message.id', ids[i]));
    return result;
  } catch (err) {
    for (const span of spans) fail(span, err);
    throw err;
  } finally {
    for (const span of spans) span.end();
  }
}

export interface Receiving {
  topic: unknown;
  group?: string;
  /** A call that may take many messages (a dequeue's count, BatchDequeue): its span counts them. */
  batch: boolean;
}

/**
 * Links the span to every delivered message's `send` span and remembers each message's context for the link
 * of its ack or nack (only for messages that carry one: nothing to remember for the others).
 */
function delivered(tracing: Tracing, span: Span, messages: Message[], batch: boolean): void {
  const recording = span.isRecording();
  for (const message of messages) {
    const carrier = traceCarrierOf(message.metadata);
    if (carrier === undefined) continue;
    tracing.delivered.remember(message.id, { topic: message.topic, carrier });
    const link = recording ? linkTo(tracing, carrier, message.id) : undefined;
    if (link) span.addLink(link);
  }
  if (!recording) return;
  if (batch || messages.length > 1) span.setAttribute('messaging.batch.message_count', messages.length);
  if (messages.length !== 1) return;
  span.setAttribute('messaging.message.id', messages[0].id);
  // How often it failed before: nacks and visibility timeouts, which make no span of their own here.
  span.setAttribute('conveyor.message.retry_count', messages[0].retryCount);
}

function receiveSpan(tracing: Tracing, parent: Context, where: Receiving): Span {
  const topic = destination(where.topic);
  const attributes: Attributes = { 'messaging.system': SYSTEM, 'messaging.operation.type': 'receive', 'messaging.operation.name': 'receive' };
  if (topic !== undefined) attributes['messaging.destination.name'] = topic;
  const group = groupName(where.group);
  if (group !== undefined) attributes['messaging.consumer.group.name'] = group;
  return tracing.tracer.startSpan(spanName('receive', topic), { kind: SpanKind.CONSUMER, attributes }, parent);
}

/** A `receive` span around a dequeue (HTTP, gRPC Dequeue and BatchDequeue), the child of the request's span. */
export async function traceReceive(request: RequestTrace, where: Receiving, work: () => Promise<Message[]>): Promise<Message[]> {
  const { tracing, context: parent } = request;
  const span = receiveSpan(tracing, parent, where);
  try {
    const messages = await context.with(trace.setSpan(parent, span), work);
    delivered(tracing, span, messages, where.batch);
    return messages;
  } catch (err) {
    fail(span, err);
    throw err;
  } finally {
    span.end();
  }
}

/**
 * A `receive` span for messages pushed to a Subscribe stream. A stream lives for hours: its deliveries are
 * not children of its call's span (one trace would grow without end) but each the root of its own trace,
 * sampled by the ratio, and linked to the messages' `send` spans as every receive is.
 */
export function traceDelivery(tracing: Tracing, where: Receiving, messages: Message[]): void {
  const span = receiveSpan(tracing, tracing.detached(), where);
  delivered(tracing, span, messages, where.batch);
  span.end();
}

export type SettleOperation = 'ack' | 'nack';

/**
 * An `ack` or `nack` span around a settling call, the child of the request's span and linked to the `send`
 * spans of the messages this instance delivered (an id delivered elsewhere gets no link). `outcome` adds what
 * the settle did (a nack's retry, failed or dlq).
 */
export async function traceSettle<T>(
  request: RequestTrace,
  operation: SettleOperation,
  ids: readonly unknown[],
  group: string | undefined,
  work: () => Promise<T>,
  outcome?: (result: T) => Attributes,
): Promise<T> {
  const { tracing, context: parent } = request;
  // Only ids that are message ids: a malformed one (answered 404 or 400) is nothing to name or look up.
  const valid = ids.map(normaliseMessageId);
  const known = valid.flatMap((id) => {
    const found = id === null ? undefined : tracing.delivered.take(id);
    return found ? [{ id: id!, ...found }] : [];
  });
  const topics = new Set(known.map((k) => k.topic));
  const topic = topics.size === 1 ? [...topics][0] : undefined;
  const attributes: Attributes = { 'messaging.system': SYSTEM, 'messaging.operation.type': 'settle', 'messaging.operation.name': operation };
  if (topic !== undefined) attributes['messaging.destination.name'] = topic;
  const groupAttribute = groupName(group);
  if (groupAttribute !== undefined) attributes['messaging.consumer.group.name'] = groupAttribute;
  if (ids.length !== 1) attributes['messaging.batch.message_count'] = ids.length;
  else if (valid[0] !== null) attributes['messaging.message.id'] = valid[0];
  const span = tracing.tracer.startSpan(spanName(operation, topic), { kind: SpanKind.INTERNAL, attributes }, parent);
  if (span.isRecording()) {
    for (const k of known) {
      const link = linkTo(tracing, k.carrier, k.id);
      if (link) span.addLink(link);
    }
  }
  try {
    const result = await context.with(trace.setSpan(parent, span), work);
    if (outcome && span.isRecording()) span.setAttributes(outcome(result));
    return result;
  } catch (err) {
    fail(span, err);
    throw err;
  } finally {
    span.end();
  }
}
