import { Metadata, ServerInterceptingCall, ServerListenerBuilder, type ServerInterceptor, type StatusObject } from '@grpc/grpc-js';

/**
 * Checks a call's token before its request is read. grpc-js reads, decompresses and decodes a request message
 * only when the handler asks for it, which the handler does as soon as it has the call's metadata: holding the
 * metadata back until the token is verified means the message of a caller without a valid token is never
 * read. Otherwise a few kilobytes of gzip (a batch of millions of empty messages, up to the 64 MiB a request
 * may decompress to) cost seconds of CPU and gigabytes of memory before the UNAUTHENTICATED answer.
 * Only the methods under `servicePath` (health checks and reflection stay open); `check` rejects to refuse,
 * and `refuse` turns its error into the status to answer (and records it).
 */
export function authenticateFirst(
  servicePath: string,
  check: (metadata: Metadata, peer: string) => Promise<unknown>,
  refuse: (method: string, err: unknown, started: number) => Pick<StatusObject, 'code' | 'details'>,
): ServerInterceptor {
  const prefix = `/${servicePath}/`;
  return (method, call) => {
    if (!method.path.startsWith(prefix)) return new ServerInterceptingCall(call);
    const name = method.path.slice(prefix.length);
    const intercepting: ServerInterceptingCall = new ServerInterceptingCall(call, {
      start: (next) =>
        next(
          new ServerListenerBuilder()
            .withOnReceiveMetadata((metadata, proceed) => {
              const started = performance.now();
              check(metadata, call.getPeer()).then(
                () => proceed(metadata),
                (err) => intercepting.sendStatus({ ...refuse(name, err, started), metadata: new Metadata() }),
              );
            })
            .build(),
        ),
    });
    return intercepting;
  };
}
