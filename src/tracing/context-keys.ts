import { createContextKey } from '@opentelemetry/api';

/** The tracer of the server whose request a context belongs to: statement spans (statement-spans.ts) start with it. */
export const TRACER_KEY = createContextKey('conveyor tracer');
