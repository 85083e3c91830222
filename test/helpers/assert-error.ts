import { expect } from 'vitest';
import type { ApiResponse } from './http.js';

/** Contract §7: an error is `{"error": "<non-empty message>"}` as application/json, and nothing more. */
export function expectErrorBody(res: ApiResponse, status: number): void {
  expect(res.status, `${status} expected, got ${res.status}: ${res.text}`).toBe(status);
  expect(res.headers.get('content-type') ?? '').toMatch(/^application\/json/);
  expect(Object.keys(res.body ?? {})).toEqual(['error']);
  expect(typeof res.body.error).toBe('string');
  expect(res.body.error.length).toBeGreaterThan(0);
  expect(res.text).not.toMatch(/\bat .+\(.+:\d+:\d+\)|node_modules|\.ts:\d+|sqlite|knex|syntax to use near/i);
  expect(res.text).not.toMatch(/\bER_[A-Z_]+|SQLITE_[A-Z]+/);
}
