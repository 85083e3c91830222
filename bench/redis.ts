import { connect } from 'node:net';

/**
 * Whether a Redis server answers at `url`: a PING over a plain connection, at most one second. The bench
 * gives the service on MySQL its Redis only when one is there, and says which it measured.
 */
export function redisAnswers(url: string): Promise<boolean> {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return Promise.resolve(false);
  }
  // TLS (rediss:) is taken at its word: the service reports a Redis it cannot reach in its own log.
  if (target.protocol === 'rediss:') return Promise.resolve(true);
  if (target.protocol !== 'redis:') return Promise.resolve(false);
  return new Promise((resolve) => {
    const socket = connect({ host: target.hostname || '127.0.0.1', port: Number(target.port || 6379) });
    const done = (answer: boolean) => {
      socket.destroy();
      resolve(answer);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    // +PONG, or -NOAUTH from a server that wants a password (the URL then carries it, for the service).
    socket.once('data', (chunk) => done(/^[+-]/.test(chunk.toString())));
  });
}
