import { expect } from 'vitest';
import type { Api } from './http.js';

/** Contract §2: RFC 3339 in UTC with milliseconds. */
export const RFC3339_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** A well-formed UUID that no test ever creates. */
export const MISSING_ID = '0190a0a0-0000-7000-8000-000000000000';

/** Every message of a topic as `GET /api/messages` shows it (list view), oldest first. */
export async function listTopic(api: Api, topic: string): Promise<any[]> {
  const res = await api.get(`/api/messages?topic=${encodeURIComponent(topic)}&limit=200`);
  expect(res.status).toBe(200);
  return res.body.items;
}

/** The list view of one message, looked up in `topic`; undefined when it is not there. */
export async function findMessage(api: Api, topic: string, id: string): Promise<any | undefined> {
  return (await listTopic(api, topic)).find((m) => m.id === id);
}

export async function enqueueId(api: Api, topic: string, payload = 'p', extra: Record<string, unknown> = {}): Promise<string> {
  const res = await api.enqueue(topic, payload, extra);
  expect(res.status, res.text).toBe(201);
  return res.body.id;
}

/** Dequeues exactly the ids expected and returns the messages. */
export async function dequeueIds(api: Api, topic: string, extra: Record<string, unknown> = {}): Promise<string[]> {
  const res = await api.dequeue(topic, extra);
  expect(res.status, res.text).toBe(200);
  return res.body.messages.map((m: any) => m.id);
}

export async function nack(api: Api, id: string, error?: string): Promise<void> {
  const res = await api.post(`/api/messages/${id}/nack`, error === undefined ? undefined : { error });
  expect(res.status, res.text).toBe(204);
}

/** Dequeues the single message of `topic` and nacks it: one failed delivery attempt. */
export async function failOnce(api: Api, topic: string, id: string, error = 'boom'): Promise<void> {
  expect(await dequeueIds(api, topic)).toEqual([id]);
  await nack(api, id, error);
}

export async function putTopicConfig(api: Api, topic: string, body: Record<string, unknown>): Promise<any> {
  const res = await api.put(`/api/topic-configs/${topic}`, body);
  expect(res.status, res.text).toBe(200);
  return res.body;
}
