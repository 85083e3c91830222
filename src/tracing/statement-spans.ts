import { context, SpanKind, SpanStatusCode, trace, type Span, type Tracer } from '@opentelemetry/api';
import type { Knex } from 'knex';
import { TRACER_KEY } from './context-keys.js';

let enabled = false;

/** Once a server of this process traces: from then on statements look for a traced request to report to. */
export function enableStatementSpans(): void {
  enabled = true;
}

const OPERATION = /^\s*\(?\s*([a-z]+)/i;
const TARGET: Record<string, RegExp> = {
  SELECT: /\bfrom\s+[`"]?(\w+)/i,
  INSERT: /\binto\s+[`"]?(\w+)/i,
  REPLACE: /\binto\s+[`"]?(\w+)/i,
  UPDATE: /^\s*update\s+[`"]?(\w+)/i,
  DELETE: /\bfrom\s+[`"]?(\w+)/i,
};
const MAX_TEXT = 2048;

/**
 * A statement's shape, whatever it was built from: string literals and numbers become `?` (the store binds its
 * values, but a constant in the text must not be mistaken for safe to show either), and the long lists of
 * placeholders of a batch (`(?, ?), (?, ?), …`, `IN (?, ?, …)`) are cut to their first item.
 */
export function statementShape(sql: string): string {
  const shape = sql
    .replace(/'(?:[^'\\]|\\.|'')*'/g, '?')
    .replace(/\b\d+(?:\.\d+)?\b/g, '?')
    .replace(/(\([?, ]*\?\))(?:\s*,\s*\([?, ]*\?\))+/g, '$1, …')
    .replace(/\?(?:\s*,\s*\?){3,}/g, '?, ?, …');
  return shape.length > MAX_TEXT ? `${shape.slice(0, MAX_TEXT)}…` : shape;
}

/**
 * A CLIENT span for one statement, the child of the active span, when that span is a traced request's and is
 * being recorded: a request that was not sampled, and work no request asked for (reapers, a poll), make none.
 * A statement that serves several requests at once (a group commit's INSERT, an ack batch's DELETE, a combined
 * claim) shows in the trace of the request whose call started it.
 */
export function startStatementSpan(system: string, sql: string): Span | undefined {
  if (!enabled) return undefined;
  const active = context.active();
  if (!trace.getSpan(active)?.isRecording()) return undefined;
  const tracer = active.getValue(TRACER_KEY) as Tracer | undefined;
  if (tracer === undefined) return undefined;
  const operation = (OPERATION.exec(sql)?.[1] ?? 'statement').toUpperCase();
  const target = TARGET[operation]?.exec(sql)?.[1];
  const attributes: Record<string, string> = { 'db.system.name': system, 'db.operation.name': operation, 'db.query.text': statementShape(sql) };
  if (target !== undefined) attributes['db.collection.name'] = target;
  return tracer.startSpan(target === undefined ? operation : `${operation} ${target}`, { kind: SpanKind.CLIENT, attributes }, active);
}

/** Ends a statement's span; a failure is named by its driver code (ER_LOCK_DEADLOCK, SQLITE_BUSY), never its message. */
export function endStatementSpan(span: Span | undefined, err?: unknown): void {
  if (span === undefined) return;
  if (err !== undefined) {
    const code = (err as { code?: unknown } | null)?.code;
    span.setAttribute('error.type', typeof code === 'string' ? code : 'error');
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}

interface KnexQueryEvent {
  __knexQueryUid?: string;
  sql?: string;
}

/** Statement spans for every statement knex runs on `db` (and its transactions); statement.ts reports the ones it runs itself. */
export function traceStatements(db: Knex, system: string): void {
  const open = new Map<string, Span>();
  db.on('query', (query: KnexQueryEvent) => {
    if (query.__knexQueryUid === undefined || typeof query.sql !== 'string') return;
    const span = startStatementSpan(system, query.sql);
    if (span) open.set(query.__knexQueryUid, span);
  });
  const end = (query: KnexQueryEvent | undefined, err?: unknown) => {
    const uid = query?.__knexQueryUid;
    if (uid === undefined || open.size === 0) return;
    endStatementSpan(open.get(uid), err);
    open.delete(uid);
  };
  db.on('query-response', (_response: unknown, query: KnexQueryEvent) => end(query));
  db.on('query-error', (err: unknown, query: KnexQueryEvent) => end(query, err ?? 'error'));
}
