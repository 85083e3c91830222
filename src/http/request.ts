import { IncomingMessage, type ServerResponse } from 'node:http';
import type { Principal } from '../auth/authorizer.js';
import type { Logger } from '../log/logger.js';

/**
 * A request as the API's pipeline sees it: node's own IncomingMessage, made by node:http as this class
 * (node-server.ts passes it as the server's `IncomingMessage`), with the fields the pipeline fills in. Every
 * request has the same shape from its first byte: nothing swaps its prototype on the way, which is what made
 * express cost ~30 µs of CPU per request here (docs/benchmark.md).
 */
export class ApiRequest extends IncomingMessage {
  /** The request id: the client's X-Request-Id when it is sane, else a new UUID. */
  id = '';
  /** The URL's path, undecoded, as the route table matches it. */
  path = '/';
  /** The path parameters of the matched route template, decoded. */
  params: Record<string, string> = NO_PARAMS;
  /** The query string as node's querystring parses it: a string, or an array when a name repeats. */
  query: Record<string, string | string[]> = NO_QUERY;
  /** The parsed JSON body (body-reader.ts); undefined for a request without one. */
  body: unknown = undefined;
  /** The caller behind the bearer token; null when auth is off or the path needs no token. */
  principal: Principal | null = null;
  /** Made on first use, with the request id: most requests never log. */
  private logger: Logger | undefined;
  private baseLogger: Logger | undefined;

  /** The logger of this request (every line carries its id). */
  get log(): Logger {
    if (this.logger === undefined) {
      if (this.baseLogger === undefined) throw new Error('request logger used before the pipeline set it');
      this.logger = this.baseLogger.child({ reqId: this.id });
    }
    return this.logger;
  }

  /** The pipeline's first step (app.ts). */
  begin(id: string, logger: Logger): void {
    this.id = id;
    this.baseLogger = logger;
  }
}

const NO_PARAMS: Record<string, string> = Object.freeze({}) as Record<string, string>;
const NO_QUERY: Record<string, string | string[]> = Object.freeze(Object.create(null));

export type ApiResponse = ServerResponse;

/** Passes to the next step of a route's chain, or with an error to the error table. */
export type Next = (err?: unknown) => void;

/** One step of a route's chain: may answer, call next, throw or reject (a rejection is next(err)). */
export type Handler = (req: ApiRequest, res: ApiResponse, next: Next) => unknown;
