// One object per HTTP request, all fields set in the constructor (a fixed
// shape keeps property access monomorphic on the hot path). uWS's HttpRequest
// is only valid during the route callback, so everything needed later is
// copied here before the first await.
import { randomUUID } from 'node:crypto';
import type { EnvelopeKind } from '../errors/envelopes.js';
import type { HttpRequest, HttpResponse } from './uws.js';

export interface Route {
  method: 'get' | 'post' | 'patch' | 'del';
  /** uWS pattern, e.g. /v1/models or /console/v1/keys/:id */
  path: string;
  /** Label for metrics and logs. */
  surface: string;
  /** Which error envelope a refusal on this route uses. */
  envelope: EnvelopeKind;
  /** Read and parse a JSON body before `handle`. */
  readsBody: boolean;
  /**
   * With readsBody: leave the body unparsed in ctx.rawBody (the handler
   * decides where to parse it: model calls parse large bodies off the event
   * loop, after authentication).
   */
  rawBody?: boolean;
  /**
   * Request headers (lower-case names) this route reads besides the fixed
   * ones, copied into ctx.headers in this order, with the query string into
   * ctx.query. Absent on model calls, which then pay nothing for it.
   */
  headers?: readonly string[];
  /**
   * A synchronous check of the request's headers (the console's admin
   * token), run first: a caller it refuses gets its refusal whatever the
   * path parameters, Content-Type or body, and the body is never read.
   */
  authorize?: (ctx: RequestContext) => void;
  /**
   * A path prefix (a model surface's: surfaces/surface.ts, surfacePrefix) below which a path
   * no route serves answers 404 in this route's envelope, not the REST one.
   */
  prefix?: string;
  handle(ctx: RequestContext): void | Promise<void>;
}

export interface RequestSink {
  requestDone(ctx: RequestContext): void;
}

const NO_PARAMS: string[] = [];

/** The route's parameters, percent-decoded; null (never a throw) when one does not decode. */
function decodeParams(req: HttpRequest, count: number): string[] | null {
  const params: string[] = [];
  for (let i = 0; i < count; i++) {
    const raw = req.getParameter(i);
    if (raw.indexOf('%') < 0) {
      params.push(raw);
      continue;
    }
    try {
      params.push(decodeURIComponent(raw));
    } catch {
      return null;
    }
  }
  return params;
}

export function newRequestId(): string {
  return 'req_' + randomUUID().replaceAll('-', '');
}

const NO_HEADERS: readonly string[] = [];

export class RequestContext {
  readonly requestId = newRequestId();
  readonly startedAt = performance.now();
  readonly method: string;
  readonly path: string;
  /** Decoded path parameters (empty when badPath). */
  readonly params: string[];
  /** A path parameter is not valid percent-encoded UTF-8: the server answers 400 invalid_path, the handler never runs. */
  readonly badPath: boolean;
  readonly authorization: string;
  readonly xApiKey: string;
  readonly contentType: string;
  readonly contentLength: string;
  readonly ifNoneMatch: string;
  readonly idempotencyKey: string;
  /** The route's `headers`, in order ('' when absent); empty when it names none. */
  readonly headers: readonly string[];
  /** The query string without '?', read only for routes that name `headers`. */
  readonly query: string;
  aborted = false;
  /** Status line and headers have gone out (unary end or stream start). */
  responded = false;
  /** The response is complete (or aborted) and accounted for. */
  finished = false;
  status = 0;
  body: unknown = undefined;
  /** The unparsed body, for routes with `rawBody`. */
  rawBody: Buffer | null = null;
  /** Size of the request body as received. */
  bodyBytes = 0;
  /** Called once when the client goes away before the response is complete. */
  onAbort: (() => void) | null = null;
  /** The error code answered (its envelope's), for the refusals metric; null when none. */
  refusal: string | null = null;
  /** Filled by authentication, for the request log line. */
  orgId: string | null = null;
  keyId: string | null = null;

  constructor(
    readonly res: HttpResponse,
    req: HttpRequest,
    readonly route: Route,
    paramCount: number,
    private readonly sink: RequestSink,
  ) {
    // uWS aborts the whole process when a route callback returns (or throws)
    // without answering and without an abort handler, so the handler goes on
    // first and nothing in this constructor may throw (issue 12 item 1).
    res.onAborted(() => {
      this.aborted = true;
      const cb = this.onAbort;
      this.onAbort = null;
      if (cb !== null) cb();
      if (!this.finished) {
        if (this.status === 0) this.status = 499;
        this.finish();
      }
    });
    this.method = req.getCaseSensitiveMethod();
    this.path = req.getUrl();
    const params = paramCount === 0 ? NO_PARAMS : decodeParams(req, paramCount);
    this.params = params ?? NO_PARAMS;
    this.badPath = params === null;
    this.authorization = req.getHeader('authorization');
    this.xApiKey = req.getHeader('x-api-key');
    this.contentType = req.getHeader('content-type');
    this.contentLength = req.getHeader('content-length');
    this.ifNoneMatch = req.getHeader('if-none-match');
    this.idempotencyKey = req.getHeader('idempotency-key');
    const extra = route.headers;
    if (extra === undefined) {
      this.headers = NO_HEADERS;
      this.query = '';
    } else {
      this.headers = extra.map((name) => req.getHeader(name));
      this.query = req.getQuery() ?? '';
    }
  }

  /** Accounts the request exactly once (log line, metrics, in-flight count). */
  finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.sink.requestDone(this);
  }
}
