import { describe, expect, it } from 'vitest';
import { checkOperations, type Operation } from '../src/http/operation.js';
import { OPERATIONS } from '../src/http/operations.js';

/**
 * Each HTTP operation is declared once (src/http/operation.ts); the router refuses to start with a declaration
 * that misses a part the types cannot require, so a route cannot be added without its access rule, its
 * OpenAPI text, its handler or, for a changing one, its audit declaration.
 */
describe('operation declarations', () => {
  it('every declared operation passes the check', () => {
    expect(() => checkOperations(OPERATIONS)).not.toThrow();
  });

  const put = OPERATIONS.find((op) => op.method === 'PUT' && op.path === '/api/topic-configs/:topic')!;
  const without = (field: string): Operation => {
    const copy: Record<string, unknown> = { ...put };
    delete copy[field];
    return copy as unknown as Operation;
  };

  it.each(['operationId', 'summary', 'tag', 'success', 'access', 'handler', 'audit'])('a declaration without %s fails the check, naming it', (field) => {
    expect(() => checkOperations([without(field)])).toThrow(field === 'audit' ? /audited/ : new RegExp(field));
  });

  it('a route declared twice, a reused operationId or a nameless body fails the check', () => {
    expect(() => checkOperations([put, { ...put, operationId: 'other' } as Operation])).toThrow(/declared twice/);
    expect(() => checkOperations([put, { ...put, method: 'DELETE' } as Operation])).toThrow(/operationId is used twice/);
    expect(() => checkOperations([{ ...put, body: { name: '', schema: put.body!.schema } } as Operation])).toThrow(/name/);
    expect(() => checkOperations([{ ...put, audit: { notAudited: '' } } as Operation])).toThrow(/say why/);
  });
});
