import { createServer, connect, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  port: number;
  /** Cuts every open connection and refuses new ones: the database "goes away" for whoever uses the proxy. */
  cut(): Promise<void>;
  /** Accepts connections again on the same port: the database "comes back". */
  restore(): Promise<void>;
}

/** A TCP pass-through to host:port, so a test can take a real database away from a server mid-run. */
export async function startTcpProxy(host: string, port: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const listen = async (listenPort: number): Promise<Server> => {
    const server = createServer((client) => {
      const upstream = connect(port, host);
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
        s.on('error', () => s.destroy());
      }
      client.pipe(upstream).pipe(client);
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
  };
}
