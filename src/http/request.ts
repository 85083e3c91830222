import { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Request, RequestHandler } from 'express';
import type { Principal } from '../auth/authorizer.js';
import type { Logger } from '../log/logger.js';

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

interface RequestFields {
  id: string;
  params: Record<string, string>;
  body: unknown;
  principal: Principal | null;
  logger: Logger | undefined;
  baseLogger: Logger | undefined;
}

/**
 * The fields every request carries, given their place on the app's request prototype (express's documented
 * way to extend `app.request`), so that requests keep one shape from their first byte to their answer.
 */
function extendRequestPrototype(proto: object): void {
  Object.defineProperties(proto, {
    log: {
      get(this: RequestFields & { id: string }) {
        if (this.logger === undefined) {
          if (this.baseLogger === undefined) throw new Error('request logger used before the pipeline set it');
          this.logger = this.baseLogger.child({ reqId: this.id });
        }
        return this.logger;
      },
    },
    begin: {
      value(this: RequestFields, id: string, logger: Logger) {
        this.id = id;
        this.baseLogger = logger;
      },
    },
  });
}

type RequestClass = new (socket: Socket) => IncomingMessage;
type ResponseClass = new (req: IncomingMessage, options?: object) => ServerResponse;

/**
 * The classes node:http creates each request and response of the port with (its `IncomingMessage` and
 * `ServerResponse` options). Their prototypes are the express app's own `app.request` and `app.response`, so the
 * prototype swap express makes on every request (`Object.setPrototypeOf(req, app.request)`) sets what is
 * already set: V8 keeps the object's shape and inline caches, where a real swap cost about 30 µs of CPU per
 * request (docs/benchmark.md, sixth round). `query` is an own property holding the strictly parsed query
 * (app.ts), in place of express's getter, which would parse it again on every read.
 */
export function requestClasses(app: { request: object; response: object }): { IncomingMessage: typeof IncomingMessage; ServerResponse: typeof ServerResponse } {
  extendRequestPrototype(app.request);
  const ApiIncomingMessage = function (this: unknown, socket: Socket) {
    const req = Reflect.construct(IncomingMessage, [socket], ApiIncomingMessage) as IncomingMessage & RequestFields;
    req.id = '';
    req.params = NO_PARAMS;
    req.body = undefined;
    req.principal = null;
    req.logger = undefined;
    req.baseLogger = undefined;
    Object.defineProperty(req, 'query', { value: NO_QUERY, writable: true, enumerable: true, configurable: true });
    return req;
  } as unknown as RequestClass;
  ApiIncomingMessage.prototype = app.request as IncomingMessage;
  const ApiServerResponse = function (this: unknown, req: IncomingMessage, options?: object) {
    const res = Reflect.construct(ServerResponse, [req, options], ApiServerResponse) as ServerResponse & { locals: object };
    res.locals = Object.create(null);
    return res;
  } as unknown as ResponseClass;
  ApiServerResponse.prototype = app.response as ServerResponse;
  return { IncomingMessage: ApiIncomingMessage as unknown as typeof IncomingMessage, ServerResponse: ApiServerResponse as unknown as typeof ServerResponse };
}
