// The uWebSockets.js app of one worker process: the routing table, reading
// and parsing JSON bodies with a limit, 404/405, per-request accounting (one
// log line, metrics, the in-flight count) and draining on shutdown.
import { GatewayError } from '../errors/gateway-error.js';
import type { Logger } from '../log/logger.js';
import { InfoLines, jsonString } from '../log/request-line.js';
import { loopMonitor } from '../metrics/event-loop.js';
import type { Metrics } from '../metrics/registry.js';
import { BODY_TOO_LARGE, readBody } from './body.js';
import { RequestContext, type Route, type RequestSink } from './context.js';
import { nestingError, nestingFault } from './json-depth.js';
import { drainState, sendError } from './respond.js';
import { App, closeListenSocket, listenSocketPort, type HttpRequest, type HttpResponse, type ListenSocket, type TemplatedApp } from './uws.js';

export interface HttpServerOptions {
  host: string;
  port: number;
  maxBodyBytes: number;
  /** JSON bodies parsed here (the console's) nest at most this deep (http.max_json_depth). */
  maxJsonDepth: number;
  logger: Logger;
  metrics: Metrics;
}

const NOT_FOUND_ROUTE: Route = { method: 'get', path: '/*', surface: 'unmatched', envelope: 'rest', readsBody: false, handle: () => {} };

function isJson(contentType: string): boolean {
  return contentType.length >= 16 && contentType.slice(0, 16).toLowerCase() === 'application/json';
}

/**
 * A body read before any check of the caller (a route with no `authorize`:
 * the console's sign-in) is at most this long, whatever http.max_body_bytes
 * says: such a body is a few credentials, and anyone may send one.
 */
export const OPEN_BODY_MAX_BYTES = 8192;

/** A request with two Content-Length headers (issue 30 item 8): refused, never parsed as a request. */
const REPEATED_LENGTH = new GatewayError('invalid_request', {
  param: 'content-length',
  fieldDetails: [{ field: 'content-length', issue: 'must be sent once' }],
});

/** uWS accepts paths of any length: a log line keeps the first part, so a long path cannot amplify the log. */
const MAX_LOGGED_PATH = 512;

const INTERNAL = JSON.stringify({ error: { code: 'internal_error', message: 'The service failed while handling the request.' } });

/**
 * Last resort when a route callback threw before its request context existed:
 * answer synchronously, so uWS never sees a callback return unanswered with
 * no abort handler (that kills the worker).
 */
function answerBare(res: HttpResponse): void {
  try {
    res.cork(() => {
      res.writeStatus('500 Internal Server Error');
      res.writeHeader('Content-Type', 'application/json');
      res.end(INTERNAL, true);
    });
  } catch {
    // Already answered or aborted: nothing is owed.
  }
}

function paramCount(pattern: string): number {
  let n = 0;
  for (const part of pattern.split('/')) if (part.startsWith(':')) n++;
  return n;
}

/** One not-found route per declared prefix, in the envelope of the routes that declare it (which must agree). */
function prefixes(routes: Route[]): Map<string, Route> {
  const out = new Map<string, Route>();
  for (const route of routes) {
    if (route.prefix === undefined) continue;
    const seen = out.get(route.prefix);
    if (seen !== undefined && seen.envelope !== route.envelope) {
      throw new Error(`routes under ${route.prefix} disagree on their envelope (${seen.envelope}, ${route.envelope})`);
    }
    out.set(route.prefix, { ...NOT_FOUND_ROUTE, envelope: route.envelope });
  }
  return out;
}

export class HttpServer implements RequestSink {
  private readonly app: TemplatedApp = App();
  private listenSocket: ListenSocket | null = null;
  private inflight = 0;
  private drained: (() => void) | null = null;
  /** The request line's writer as JSON; null when the logger is not createLogger's (a test's): then logged as an object. */
  private readonly infoLines: InfoLines | null;

  constructor(
    routes: Route[],
    private readonly opts: HttpServerOptions,
  ) {
    this.infoLines = InfoLines.of(opts.logger);
    const methodsByPath = new Map<string, Route[]>();
    for (const route of routes) {
      const count = paramCount(route.path);
      this.app[route.method](route.path, (res, req) => this.guard(res, req, route, count, (ctx) => this.dispatch(ctx)));
      const list = methodsByPath.get(route.path) ?? [];
      list.push(route);
      methodsByPath.set(route.path, list);
    }
    // uWS prefers a method route over `any` on the same pattern, so these only
    // catch the methods a known path does not accept.
    for (const [path, list] of methodsByPath) {
      const allowed = list.map((r) => (r.method === 'del' ? 'DELETE' : r.method.toUpperCase())).join(', ');
      // A surface's paths are public (the spec lists them), so there a wrong method is a 405 before the key is
      // checked; the console's paths stay behind their check.
      const route: Route = { ...list[0], readsBody: false, rawBody: false, authorize: list[0].prefix === undefined ? list[0].authorize : undefined };
      this.app.any(path, (res, req) => this.guard(res, req, route, 0, (ctx) => {
        // A caller the route refuses learns nothing more about it than its refusal.
        if (this.refusedByAuthorize(ctx)) return;
        sendError(ctx, new GatewayError('method_not_allowed'), [['Allow', allowed]]);
      }));
    }
    // Unknown paths below a surface's prefix answer in its envelope (uWS
    // prefers any static or parameter route over these wildcards).
    for (const [prefix, route] of prefixes(routes)) {
      this.app.any(prefix + '/*', (res, req) => this.guard(res, req, route, 0, (ctx) => sendError(ctx, new GatewayError('not_found'))));
    }
    this.app.any('/*', (res, req) => this.guard(res, req, NOT_FOUND_ROUTE, 0, (ctx) => sendError(ctx, new GatewayError('not_found'))));
  }

  /**
   * Runs a route callback so that nothing escapes it: uWS aborts the worker
   * when a callback throws or returns unanswered without an abort handler
   * (issue 12 item 1). The request context attaches that handler first thing.
   */
  private guard(res: HttpResponse, req: HttpRequest, route: Route, params: number, fn: (ctx: RequestContext) => void): void {
    let ctx: RequestContext | null = null;
    try {
      ctx = new RequestContext(res, req, route, params, this);
      this.inflight++;
      loopMonitor.work();
      if (ctx.repeatedLength) this.refuseFraming(ctx);
      else fn(ctx);
    } catch (err) {
      if (ctx !== null) this.fail(ctx, err);
      else {
        this.opts.logger.error({ err }, 'route callback failed before its request context');
        answerBare(res);
      }
    }
  }

  /**
   * Two Content-Length headers: uWS reads the body by the first and parses
   * what follows as the next request, which a proxy in front that went by
   * another would have taken for body (request smuggling). The answer waits
   * for the next turn of the event loop, while the request is still pending:
   * uWS then closes the connection, rather than serve it, if anything
   * follows in what it already read, and only then is the 400 sent (with
   * Connection: close) to a client that sent nothing after. Answered at once,
   * the next request would be served before the close.
   */
  private refuseFraming(ctx: RequestContext): void {
    setImmediate(() => {
      if (!ctx.aborted) sendError(ctx, REPEATED_LENGTH, null, true);
    });
  }

  /** Answers the route's refusal and returns true when its header check refuses the caller. */
  private refusedByAuthorize(ctx: RequestContext): boolean {
    const authorize = ctx.route.authorize;
    if (authorize === undefined) return false;
    try {
      authorize(ctx);
      return false;
    } catch (err) {
      // The body (if any) is never read: close rather than drain it for a caller we refuse.
      sendError(ctx, err, null, ctx.route.readsBody);
      return true;
    }
  }

  /**
   * Order matters: authenticate (routes with a header check: a model call's
   * key is checked here against the in-memory index, so a caller with no
   * live key is refused before a byte of its body is read), then the path,
   * then the Content-Type, then read the body, then bound its nesting, then
   * parse. A caller the check refuses gets the same answer whatever it sent.
   */
  private dispatch(ctx: RequestContext): void {
    const route = ctx.route;
    if (this.refusedByAuthorize(ctx)) return;
    if (ctx.badPath) {
      sendError(ctx, new GatewayError('invalid_path'), null, route.readsBody);
      return;
    }
    if (!route.readsBody) {
      this.run(ctx);
      return;
    }
    if (!isJson(ctx.contentType)) {
      sendError(ctx, new GatewayError('unsupported_media_type'));
      return;
    }
    const maxBytes = route.authorize === undefined ? Math.min(OPEN_BODY_MAX_BYTES, this.opts.maxBodyBytes) : this.opts.maxBodyBytes;
    readBody(ctx.res, ctx.contentLength, maxBytes, (tooLarge, body) => {
      if (ctx.aborted) return;
      if (tooLarge === BODY_TOO_LARGE) {
        // The rest of the body is still on the wire: close after answering.
        sendError(ctx, new GatewayError('body_too_large'), null, true);
        return;
      }
      ctx.bodyBytes = body.length;
      if (route.rawBody === true) {
        ctx.rawBody = body;
        this.run(ctx);
        return;
      }
      // V8's JSON.parse and everything after it recurse: bound the nesting on the bytes first.
      const fault = nestingFault(body, this.opts.maxJsonDepth);
      if (fault !== null) {
        sendError(ctx, nestingError(fault, this.opts.maxJsonDepth));
        return;
      }
      try {
        ctx.body = JSON.parse(body.toString('utf8'));
      } catch {
        sendError(ctx, new GatewayError('invalid_json'));
        return;
      }
      this.run(ctx);
    });
  }

  private run(ctx: RequestContext): void {
    try {
      const out = ctx.route.handle(ctx);
      if (out !== undefined) out.catch((err: unknown) => this.fail(ctx, err));
    } catch (err) {
      this.fail(ctx, err);
    }
  }

  /** A handler threw: answer in the route's envelope, or cut a started stream. */
  private fail(ctx: RequestContext, err: unknown): void {
    // A client that left mid-call makes the supplier request abort (an AbortError): expected, not a failure.
    if (!(err instanceof GatewayError) && !ctx.aborted) this.opts.logger.error({ rid: ctx.requestId, err }, 'handler failed');
    if (ctx.aborted || ctx.finished) return;
    if (!ctx.responded) sendError(ctx, err);
    else {
      ctx.res.close();
    }
  }

  requestDone(ctx: RequestContext): void {
    const seconds = (performance.now() - ctx.startedAt) / 1000;
    this.opts.metrics.observeRequest(ctx.route.surface, ctx.status, seconds, ctx.refusal);
    const path = ctx.path.length > MAX_LOGGED_PATH ? ctx.path.slice(0, MAX_LOGGED_PATH) + '…' : ctx.path;
    const ms = Math.round(seconds * 1e4) / 10;
    const lines = this.infoLines;
    const callJson = ctx.call === null ? '' : ctx.call.logJson();
    if (lines !== null && callJson !== null) {
      // The same fields, in the same order, as the object below (log/request-line.ts says why it is written as JSON).
      if (lines.enabled) {
        lines.write(
          '"rid":' + jsonString(ctx.requestId) + ',"method":' + jsonString(ctx.method) + ',"path":' + jsonString(path) + ',"status":' + ctx.status + ',"ms":' + ms +
            ',"org":' + (ctx.orgId === null ? 'null' : jsonString(ctx.orgId)) + ',"key_id":' + (ctx.keyId === null ? 'null' : jsonString(ctx.keyId)) + callJson,
          '"request"',
        );
      }
    } else {
      const line: Record<string, unknown> = { rid: ctx.requestId, method: ctx.method, path, status: ctx.status, ms, org: ctx.orgId, key_id: ctx.keyId };
      if (ctx.call !== null) ctx.call.logFields(line);
      this.opts.logger.info(line, 'request');
    }
    this.inflight--;
    if (this.inflight === 0 && this.drained !== null) this.drained();
  }

  listen(): Promise<number> {
    return new Promise((resolve, reject) => {
      this.app.listen(this.opts.host, this.opts.port, (socket) => {
        if (socket === false) {
          reject(new Error(`cannot listen on ${this.opts.host}:${this.opts.port}`));
          return;
        }
        this.listenSocket = socket;
        resolve(listenSocketPort(socket));
      });
    });
  }

  get inFlight(): number {
    return this.inflight;
  }

  /** Stops accepting connections; resolves when in-flight requests are done or the timeout passes. */
  drain(timeoutMs: number): Promise<'drained' | 'timeout'> {
    drainState.draining = true;
    if (this.listenSocket !== null) {
      closeListenSocket(this.listenSocket);
      this.listenSocket = null;
    }
    if (this.inflight === 0) return Promise.resolve('drained');
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve('timeout'), timeoutMs);
      this.drained = () => {
        clearTimeout(timer);
        resolve('drained');
      };
    });
  }
}
