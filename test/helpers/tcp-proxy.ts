import { createServer, connect, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  port: number;
  /** Cuts every open connection and refuses new ones: the database "goes away" for whoever uses the proxy. */
  cut(): Promise<void>;
  /** Accepts connections again on the same port: the database "comes back". */
  restore(): Promise<void>;
  /**
   * Points the proxy at another upstream and cuts every open connection, as a Kubernetes Service does when
   * the operator elects a new primary: clients reconnect through the same address and reach the new one.
   */
  switchTo(port: number, host?: string): void;
  /** Cuts every open connection but keeps accepting new ones: connections "lost" mid-load, the database stays. */
  dropConnections(): void;
  /**
   * The next `times` client packets containing `marker` (e.g. "COMMIT") reach the database, but their answer
   * never comes back: the connection is cut as the answer arrives. The client cannot tell whether it committed.
   */
  loseAnswerAfter(marker: string, times: number): void;
  /** Answers lost so far by loseAnswerAfter. */
  readonly lostAnswers: number;
  /**
   * Holds every byte in both directions, connections open, new ones accepted: a peer that hangs (a paused
   * process, a network dropping packets), which no connection error reveals.
   */
  hang(): void;
  /** Lets what hang() held through. */
  unhang(): void;
}

/** A TCP pass-through to host:port, so a test can take a real database away from a server mid-run. */
export async function startTcpProxy(host: string, port: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let target = { host, port };
  let lose = { marker: Buffer.alloc(0), left: 0 };
  let lostAnswers = 0;
  let hung = false;
  const listen = async (listenPort: number): Promise<Server> => {
    const server = createServer((client) => {
      const upstream = connect(target.port, target.host);
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
        s.on('error', () => s.destroy());
        if (hung) s.pause();
      }
      client.pipe(upstream);
      let doomed = false;
      client.on('data', (chunk: Buffer) => {
        if (lose.left > 0 && chunk.includes(lose.marker)) {
          lose.left--;
          doomed = true;
        }
      });
      upstream.on('data', (chunk: Buffer) => {
        if (!doomed) return void client.write(chunk);
        lostAnswers++;
        client.destroy();
        upstream.destroy();
      });
      upstream.on('end', () => client.end());
    });
    await new Promise<void>((resolve) => server.listen(listenPort, '127.0.0.1', resolve));
    return server;
  };
  let server = await listen(0);
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('proxy has no port');
  const proxyPort = address.port;
  return {
    port: proxyPort,
    cut: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
    },
    restore: async () => {
      server = await listen(proxyPort);
    },
    switchTo: (newPort, newHost = target.host) => {
      target = { host: newHost, port: newPort };
      for (const s of sockets) s.destroy();
    },
    dropConnections: () => {
      for (const s of sockets) s.destroy();
    },
    loseAnswerAfter: (marker, times) => {
      lose = { marker: Buffer.from(marker), left: times };
    },
    get lostAnswers() {
      return lostAnswers;
    },
    hang: () => {
      hung = true;
      for (const s of sockets) s.pause();
    },
    unhang: () => {
      hung = false;
      for (const s of sockets) s.resume();
    },
  };
}
