import type { RedisClientType } from 'redis';

/**
 * How long the service waits for Redis to answer one command before it carries on without it. The client's
 * own command timeout stops counting once a command is written, so a Redis that keeps the connection open but
 * answers nothing (a paused process, a network that drops packets) would otherwise hold the caller forever.
 */
export const REDIS_ANSWER_MS = 500;

/**
 * The Redis client library, loaded when a Redis URL is configured: it is some 650 modules, which every start
 * (a laptop's on SQLite, every CLI command) would otherwise read and compile for nothing.
 */
export const loadRedis = () => import('redis');

/** How long a graceful QUIT may take at shutdown before the connection is dropped. */
const CLOSE_GRACE_MS = 1000;

/** Settles with `promise`, or with `undefined` once `ms` have passed. */
export function withinMs<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
    timer.unref();
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/**
 * Stops a client at shutdown. A graceful QUIT waits for every command sent before it, which a hung Redis
 * never answers: after CLOSE_GRACE_MS the connection is dropped instead. A client that never connected is
 * still retrying: dropped at once.
 */
export async function closeRedisClient(client: RedisClientType): Promise<void> {
  if (client.isReady) await withinMs(client.close().then(() => true), CLOSE_GRACE_MS).catch(() => undefined);
  if (client.isOpen) client.destroy();
}
