// The uWebSockets.js app of one worker process: the routing table, reading
// and parsing JSON bodies with a limit, 404/405, per-request accounting (one
// log line, metrics, the in-flight count) and draining on shutdown.
import { GatewayError } from '../errors/gateway-error.js';
import type { Logger } from '../log/logger.js';
import type { Metrics } from '../metrics/registry.js';
import { BODY_TOO_LARGE, readBody } from './body.js';
import { RequestContext, type Route, type RequestSink } from './context.js';
import { drainState, sendError } from './respond.js';
import { App, closeListenSocket, listenSocketPort, type HttpRequest, type HttpResponse, type ListenSocket, type TemplatedApp } from './uws.js';

export interface HttpServerOptions {
  host: string;
  port: number;
  maxBodyBytes: number;
  logger: Logger;
  metrics: Metrics;
}

const NOT_FOUND_ROUTE: Route = { method: 'get', path: '/*', surface: 'unmatched', envelope: 'rest', readsBody: false, handle: () => {} };

function isJson(contentType: string): boolean {
  return contentType.length >= 16 && contentType.slice(0, 16).toLowerCase() === 'application/json';
}

function paramCount(pattern: string): number {
  let n = 0;
  for (const part of pattern.split('/')) if (part.startsWith(':')) n++;
  return n;
}

export class HttpServer implements RequestSink {
  private readonly app: TemplatedApp = App();
  private listenSocket: ListenSocket | null = null;
  private inflight = 0;
  private drained: (() => void) | null = null;

  constructor(
    routes: Route[],
    private readonly opts: HttpServerOptions,
  ) {
    const methodsByPath = new Map<string, Route[]>();
    for (const route of routes) {
      const count = paramCount(route.path);
      this.app[route.method](route.path, (res, req) => this.dispatch(res, req, route, count));
      const list = methodsByPath.get(route.path) ?? [];
      list.push(route);
      methodsByPath.set(route.path, list);
    }
    // uWS prefers a method route over `any` on the same pattern, so these only
    // catch the methods a known path does not accept.
    for (const [path, list] of methodsByPath) {
      const allowed = list.map((r) => (r.method === 'del' ? 'DELETE' : r.method.toUpperCase())).join(', ');
      const route: Route = { ...list[0], readsBody: false };
      this.app.any(path, (res, req) => {
        const ctx = this.begin(res, req, route, 0);
        sendError(ctx, new GatewayError('method_not_allowed'), [['Allow', allowed]]);
      });
    }
    this.app.any('/*', (res, req) => {
      const ctx = this.begin(res, req, NOT_FOUND_ROUTE, 0);
      sendError(ctx, new GatewayError('not_found'));
    });
  }

  private begin(res: HttpResponse, req: HttpRequest, route: Route, params: number): RequestContext {
    this.inflight++;
    return new RequestContext(res, req, route, params, this);
  }

  private dispatch(res: HttpResponse, req: HttpRequest, route: Route, params: number): void {
    const ctx = this.begin(res, req, route, params);
    if (!route.readsBody) {
      this.run(ctx);
      return;
    }
    if (!isJson(ctx.contentType)) {
      sendError(ctx, new GatewayError('unsupported_media_type'));
      return;
    }
    readBody(res, ctx.contentLength, this.opts.maxBodyBytes, (tooLarge, body) => {
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
    if (!(err instanceof GatewayError)) this.opts.logger.error({ rid: ctx.requestId, err }, 'handler failed');
    if (ctx.aborted || ctx.finished) return;
    if (!ctx.responded) sendError(ctx, err);
    else {
      ctx.res.close();
    }
  }

  requestDone(ctx: RequestContext): void {
    const seconds = (performance.now() - ctx.startedAt) / 1000;
    this.opts.metrics.observeRequest(ctx.route.surface, ctx.status, seconds);
    this.opts.logger.info(
      { rid: ctx.requestId, method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(seconds * 1e4) / 10, org: ctx.orgId, key_id: ctx.keyId },
      'request',
    );
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
