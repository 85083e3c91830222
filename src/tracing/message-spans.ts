import { context, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Link, type Span } from '@opentelemetry/api';
import type { Message } from '../queue/message.js';
import type { EnqueueInput } from '../queue/messages.js';
import { assertConsumerGroupName } from '../queue/consumer-group-names.js';
import { normaliseMessageId } from '../queue/message-ids.js';
import { isValidTopicName } from '../queue/topic-names.js';
import type { AttemptResult } from '../store/messages/settle.js';
import type { DeliveredContext } from './delivered-contexts.js';
import { traceCarrierOf, TRACEPARENT_KEY, TRACESTATE_KEY } from './trace-metadata.js';
import { errorTypeOf, type RequestTrace, type Tracing } from './tracing.js';

/**
 * The messaging spans of the OpenTelemetry semantic conventions, as a broker sees them: `send` per message
 * enqueued, `receive` per delivery (a dequeue, a push to a Subscribe stream), `ack` and `nack` (settle) per
 * settling call; the transports call these around the domain's work. An `expire` (settle) span per message
 * whose visibility timeout passed comes from the domain's attempts observer (expiry-spans.ts). Attributes name
 * topics, groups, ids and counts, never a payload, a key or a metadata value.
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
  // How often it failed before, nacks and visibility timeouts alike (their nack and expire spans are in other traces).
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

/** The one topic of the messages, or undefined when there are none or several. */
function oneTopicOf(messages: ReadonlyArray<{ topic: string }>): string | undefined {
  const topics = new Set(messages.map((m) => m.topic));
  return topics.size === 1 ? [...topics][0] : undefined;
}

/**
 * The stored contexts of messages another instance delivered (its statement a child of the settle span). A
 * failed read costs the span its links, never the settle.
 */
async function storedContextsOf(tracing: Tracing, within: Context, ids: string[]): Promise<Array<{ id: string } & DeliveredContext>> {
  try {
    const stored = await context.with(within, () => tracing.storedContexts!(ids));
    return [...stored].map(([id, { topic, trace }]) => ({ id, topic, carrier: trace }));
  } catch {
    return [];
  }
}

/**
 * An `ack` or `nack` span around a settling call, the child of the request's span and linked to the `send`
 * spans of its messages. The context of a message this instance delivered is remembered (delivered-contexts.ts);
 * that of one delivered by another instance is read from the store before the settle removes it, one
 * primary-key read for all such ids of the call, and only when the span is recorded. `outcome` adds what the
 * settle did (a nack's retry, failed or dlq).
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
  const known: Array<{ id: string } & DeliveredContext> = [];
  const missing = new Set<string>();
  for (const id of valid) {
    if (id === null) continue;
    const found = tracing.delivered.take(id);
    if (found) known.push({ id, ...found });
    else missing.add(id);
  }
  // With ids to read, the topic is named once they are read: only a recorded span reads them, and only a
  // recorded span's attributes are kept.
  const lookUp = missing.size > 0 && tracing.storedContexts !== undefined;
  const topic = lookUp ? undefined : oneTopicOf(known);
  const attributes: Attributes = { 'messaging.system': SYSTEM, 'messaging.operation.type': 'settle', 'messaging.operation.name': operation };
  if (topic !== undefined) attributes['messaging.destination.name'] = topic;
  const groupAttribute = groupName(group);
  if (groupAttribute !== undefined) attributes['messaging.consumer.group.name'] = groupAttribute;
  if (ids.length !== 1) attributes['messaging.batch.message_count'] = ids.length;
  else if (valid[0] !== null) attributes['messaging.message.id'] = valid[0];
  const span = tracing.tracer.startSpan(spanName(operation, topic), { kind: SpanKind.INTERNAL, attributes }, parent);
  const within = trace.setSpan(parent, span);
  if (span.isRecording()) {
    if (lookUp) {
      known.push(...(await storedContextsOf(tracing, within, [...missing])));
      const named = oneTopicOf(known);
      if (named !== undefined) {
        span.setAttribute('messaging.destination.name', named);
        span.updateName(spanName(operation, named));
      }
    }
    for (const k of known) {
      const link = linkTo(tracing, k.carrier, k.id);
      if (link) span.addLink(link);
    }
  }
  try {
    const result = await context.with(within, work);
    if (outcome && span.isRecording()) span.setAttributes(outcome(result));
    return result;
  } catch (err) {
    fail(span, err);
    throw err;
  } finally {
    span.end();
  }
}

/**
 * An `expire` span for a message released after its visibility timeout (by a dequeue's sweep or the expiry
 * reaper), with what the attempt decided. Like a Subscribe delivery, no request asked for it: each is the root
 * of its own trace, sampled by the ratio, and linked to the message's `send` span.
 */
export function traceExpiry(tracing: Tracing, result: AttemptResult): void {
  const topic = destination(result.topic);
  const attributes: Attributes = {
    'messaging.system': SYSTEM,
    'messaging.operation.type': 'settle',
    'messaging.operation.name': 'expire',
    'messaging.message.id': result.id,
    'conveyor.expire.outcome': result.outcome,
  };
  if (topic !== undefined) attributes['messaging.destination.name'] = topic;
  const group = groupName(result.group);
  if (group !== undefined) attributes['messaging.consumer.group.name'] = group;
  const span = tracing.tracer.startSpan(spanName('expire', topic), { kind: SpanKind.INTERNAL, attributes }, tracing.detached());
  if (result.trace !== undefined && span.isRecording()) {
    const link = linkTo(tracing, result.trace, result.id);
    if (link) span.addLink(link);
  }
  span.end();
}
