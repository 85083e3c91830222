import { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Request, RequestHandler } from 'express';
import type { Principal } from '../auth/authorizer.js';
import type { Logger } from '../log/logger.js';
import type { RequestTrace } from '../tracing/tracing.js';

/**
 * A request as the API's pipeline sees it: an express request (its prototype is the app's `app.request`) with
 * the fields the pipeline fills in. `path` is express's: the URL's path, undecoded.
 */
export interface ApiRequest extends Omit<Request, 'query' | 'params' | 'body'> {
  /** The request id: the client's X-Request-Id when it is sane, else a new UUID. */
  id: string;
  /** The path parameters of the matched route template, decoded. */
  params: Record<string, string>;
  /** The query string as node's querystring parses it: a string, or an array when a name repeats. */
  query: Record<string, string | string[]>;
  /** The JSON body (body-reader.ts), then what the operation's schema made of it; undefined without one. */
  body: unknown;
  /** The caller behind the bearer token; null when auth is off or the path needs no token. */
  principal: Principal | null;
  /** The request's server span and context, with tracing on (src/http/tracing.ts); undefined otherwise. */
  trace: RequestTrace | undefined;
  /** The logger of this request (every line carries its id), made on first use: most requests never log. */
  readonly log: Logger;
  /** The pipeline's first step (app.ts). */
  begin(id: string, logger: Logger): void;
}

/** Responses are node's: the API writes its answers itself (respond.ts), not through express's helpers. */
export type ApiResponse = ServerResponse;

/** Passes to the next step of a route's chain, or with an error to the error table. */
export type Next = (err?: unknown) => void;

/** One step of a route's chain: may answer, call next, throw or reject (a rejection is next(err)). */
export type Handler = (req: ApiRequest, res: ApiResponse, next: Next) => unknown;

/** The steps as express takes them: every request of the port is an ApiRequest (requestClasses below). */
export const expressSteps = (steps: Handler[]): RequestHandler[] => steps as unknown as RequestHandler[];

const NO_PARAMS: Record<string, string> = Object.freeze({}) as Record<string, string>;
const NO_QUERY: Record<string, string | string[]> = Object.freeze(Object.create(null));

/**
 * The classes node:http creates each request and response of the port with (its `IncomingMessage` and
 * `ServerResponse` options). They become the express app's `app.request` and `app.response` (each inherits
 * express's request or response, which inherits node's), so the prototype swap express makes on every request
 * (`Object.setPrototypeOf(req, app.request)`) sets what is already set, and V8 keeps the object's shape and
 * inline caches, where a real swap cost about 30 µs of CPU per request (docs/benchmark.md, sixth round).
 * They are plain subclasses: an object made through `Reflect.construct` with another prototype measured
 * 80 µs more per request. Every field the pipeline fills in is set in the constructor, so requests keep one
 * shape from their first byte to their answer. `query` is an own property holding the strictly parsed query
 * (app.ts), in place of express's getter, which would parse it again on every read.
 */
export function requestClasses(app: { request: object; response: object }): { IncomingMessage: typeof IncomingMessage; ServerResponse: typeof ServerResponse } {
  const expressRequest = Object.getPrototypeOf(app.request) as object;
  const expressResponse = Object.getPrototypeOf(app.response) as object;
  class ApiIncomingMessage extends IncomingMessage {
    id = '';
    params: Record<string, string> = NO_PARAMS;
    body: unknown = undefined;
    principal: Principal | null = null;
    trace: RequestTrace | undefined = undefined;
    private logger: Logger | undefined = undefined;
    private baseLogger: Logger | undefined = undefined;

    constructor(socket: Socket) {
      super(socket);
      Object.defineProperty(this, 'query', { value: NO_QUERY, writable: true, enumerable: true, configurable: true });
    }

    get log(): Logger {
      if (this.logger === undefined) {
        if (this.baseLogger === undefined) throw new Error('request logger used before the pipeline set it');
        this.logger = this.baseLogger.child({ reqId: this.id });
      }
      return this.logger;
    }

    begin(id: string, logger: Logger): void {
      this.id = id;
      this.baseLogger = logger;
    }
  }
  class ApiServerResponse extends ServerResponse {
    locals: object = Object.create(null);
  }
  Object.setPrototypeOf(ApiIncomingMessage.prototype, expressRequest);
  Object.setPrototypeOf(ApiServerResponse.prototype, expressResponse);
  // Express finds its app through req.app and res.app, which it puts on app.request and app.response.
  Object.defineProperty(ApiIncomingMessage.prototype, 'app', { value: (app.request as { app: unknown }).app, writable: true, configurable: true, enumerable: true });
  Object.defineProperty(ApiServerResponse.prototype, 'app', { value: (app.response as { app: unknown }).app, writable: true, configurable: true, enumerable: true });
  app.request = ApiIncomingMessage.prototype;
  app.response = ApiServerResponse.prototype;
  return { IncomingMessage: ApiIncomingMessage, ServerResponse: ApiServerResponse as unknown as typeof ServerResponse };
}
