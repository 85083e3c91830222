// CEL for x-kubernetes-validations, on @marcbachmann/cel-js, plus a few functions of the Kubernetes CEL
// libraries (lists, regex, urls) that cel-js does not have.
import { Environment } from '@marcbachmann/cel-js';

const cmp = (a: unknown, b: unknown): number => {
  if (typeof a === 'bigint' && typeof b === 'bigint') return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  const na = Number(a);
  const nb = Number(b);
  return na - nb;
};

const celEquals = (a: unknown, b: unknown): boolean => {
  if (typeof a === 'bigint' || typeof b === 'bigint') {
    try {
      return Number(a) === Number(b);
    } catch {
      return false;
    }
  }
  return JSON.stringify(a, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v)) ===
    JSON.stringify(b, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v));
};

const env = new Environment({
  unlistedVariablesAreDyn: true,
  enableOptionalTypes: true,
  homogeneousAggregateLiterals: false,
})
  // Kubernetes list library
  .registerFunction('list<dyn>.isSorted(): bool', (l: unknown[]) => l.every((v, i) => i === 0 || cmp(l[i - 1], v) <= 0))
  .registerFunction('list<dyn>.sum(): dyn', (l: unknown[]) =>
    l.length === 0
      ? 0n
      : l.reduce((acc: any, v: any) => (typeof acc === 'bigint' && typeof v === 'bigint' ? acc + v : Number(acc) + Number(v))),
  )
  .registerFunction('list<dyn>.min(): dyn', (l: unknown[]) => {
    if (l.length === 0) throw new Error('min called on empty list');
    return l.reduce((a, b) => (cmp(a, b) <= 0 ? a : b));
  })
  .registerFunction('list<dyn>.max(): dyn', (l: unknown[]) => {
    if (l.length === 0) throw new Error('max called on empty list');
    return l.reduce((a, b) => (cmp(a, b) >= 0 ? a : b));
  })
  .registerFunction('list<dyn>.indexOf(dyn): int', (l: unknown[], v: unknown) => BigInt(l.findIndex((x) => celEquals(x, v))))
  .registerFunction('list<dyn>.lastIndexOf(dyn): int', (l: unknown[], v: unknown) => {
    for (let i = l.length - 1; i >= 0; i--) if (celEquals(l[i], v)) return BigInt(i);
    return -1n;
  })
  // Kubernetes regex library
  .registerFunction('string.find(string): string', (s: string, re: string) => new RegExp(re).exec(s)?.[0] ?? '')
  .registerFunction('string.findAll(string): list<string>', (s: string, re: string) =>
    Array.from(s.matchAll(new RegExp(re, 'g')), (m) => m[0]),
  )
  // Kubernetes URL library (validity only)
  .registerFunction('isURL(string): bool', (s: string) => {
    try {
      new URL(s);
      return true;
    } catch {
      return s.startsWith('/');
    }
  });

export interface CompiledRule {
  rule: string;
  message?: string;
  messageExpression?: string;
  reason?: string;
  fieldPath?: string;
  /** Transition rule: mentions oldSelf, so it only runs on update when an old value exists. */
  usesOldSelf: boolean;
  evaluate(vars: { self: unknown; oldSelf?: unknown }): unknown;
  evaluateMessage?(vars: { self: unknown; oldSelf?: unknown }): unknown;
}

/** Mentions of the identifier `oldSelf` outside string literals. */
function mentionsOldSelf(src: string): boolean {
  const noStrings = src.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""');
  return /(^|[^A-Za-z0-9_.])oldSelf\b/.test(noStrings);
}

/** First line of a cel-js error, shaped like cel-go's (lower-case start). */
export function celErrorText(err: unknown): string {
  const msg = String((err as Error)?.message ?? err).split('\n')[0].trim();
  return msg.charAt(0).toLowerCase() + msg.slice(1);
}

/** Parse (compile) a rule; throws Error with a cel-go-like message on syntax errors. */
export function compileRule(r: {
  rule: string;
  message?: string;
  messageExpression?: string;
  reason?: string;
  fieldPath?: string;
}): CompiledRule {
  let program: (ctx: Record<string, unknown>) => unknown;
  try {
    program = env.parse(r.rule) as unknown as (ctx: Record<string, unknown>) => unknown;
  } catch (e) {
    throw new Error(`compilation failed: ERROR: <input>: ${celErrorText(e)}`);
  }
  let messageProgram: ((ctx: Record<string, unknown>) => unknown) | undefined;
  if (r.messageExpression) {
    try {
      messageProgram = env.parse(r.messageExpression) as unknown as (ctx: Record<string, unknown>) => unknown;
    } catch (e) {
      throw new Error(`messageExpression compilation failed: ERROR: <input>: ${celErrorText(e)}`);
    }
  }
  return {
    rule: r.rule,
    message: r.message,
    messageExpression: r.messageExpression,
    reason: r.reason,
    fieldPath: r.fieldPath,
    usesOldSelf: mentionsOldSelf(r.rule),
    evaluate: (vars) => program(vars),
    evaluateMessage: messageProgram ? (vars) => messageProgram!(vars) : undefined,
  };
}
