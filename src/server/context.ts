// One object per HTTP request, all fields set in the constructor (a fixed
// shape keeps property access monomorphic on the hot path). uWS's HttpRequest
// is only valid during the route callback, so everything needed later is
// copied here before the first await.
import { randomFillSync } from 'node:crypto';
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
   * token; a model call's key against the in-memory key index), run first:
   * a caller it refuses gets its refusal whatever the path parameters,
   * Content-Type or body, and the body is never read. A route without one
   * that reads a body gets a small body limit (server/http-server.ts).
   */
  authorize?: (ctx: RequestContext) => void;
  /**
   * A path prefix (a model surface's: surfaces/surface.ts, surfacePrefix) below which a path
   * no route serves answers 404 in this route's envelope, not the REST one.
   */
  prefix?: string;
  handle(ctx: RequestContext): void | Promise<void>;
}

/** A model call, as the request log line sees it (pipeline/call.ts ModelCall). */
export interface LoggedCall {
  /**
   * The call's fields as JSON members, each led by a comma (`,"model":"…",…`),
   * for a line written as JSON (log/request-line.ts); null when the call needs
   * them as an object instead (logFields): a traced call, whose span reads them.
   */
  logJson(): string | null;
  logFields(into: Record<string, unknown>): void;
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

/**
 * `req_` and 32 hex digits laid out as a UUIDv7: 48 bits of the millisecond
 * clock, the version nibble 7, then 74 random bits with the variant's two bits
 * (10) among them. Time-ordered ids append to the right edge of the usage
 * rows' primary key, where a random id lands on a random leaf: in a table
 * larger than the store's cache that is a page read, an eviction's write and,
 * after each checkpoint, a full page image in the WAL per call.
 * The digits are written into one buffer and read out as one string: a
 * randomUUID() sliced three times and joined made ~0.9 KB of garbage per call
 * (docs/performance.md, "Where a call's garbage comes from"). The random bytes
 * come from a pool drawn with randomFillSync, as randomUUID's own do.
 */
export function newRequestId(): string {
  const ms = Date.now();
  if (ms !== idMs) {
    idMs = ms;
    ID_BYTES.write(ms.toString(16).padStart(12, '0'), 4, 'latin1');
  }
  if (idRandomAt + ID_RANDOM_BYTES > idRandom.length) {
    randomFillSync(idRandom);
    idRandomAt = 0;
  }
  const r = idRandom;
  let at = idRandomAt;
  idRandomAt += ID_RANDOM_BYTES;
  // Bytes 0–9 give nibbles n0…n19: n0–n2 after the version, the variant from n3's low two bits, n4–n18 to the end.
  ID_BYTES[17] = HEX[r[at] >> 4];
  ID_BYTES[18] = HEX[r[at] & 15];
  ID_BYTES[19] = HEX[r[at + 1] >> 4];
  ID_BYTES[20] = HEX[8 | (r[at + 1] & 3)];
  at += 2;
  for (let i = 21; i < 35; i += 2, at++) {
    ID_BYTES[i] = HEX[r[at] >> 4];
    ID_BYTES[i + 1] = HEX[r[at] & 15];
  }
  ID_BYTES[35] = HEX[r[at] >> 4];
  return ID_BYTES.toString('latin1', 0, 36);
}
const HEX = Buffer.from('0123456789abcdef', 'latin1');
/** `req_`, 12 digits of the clock, `7`, 19 digits drawn per id. */
const ID_BYTES = Buffer.from('req_000000000000' + '7' + '0'.repeat(19), 'latin1');
/** Random bytes per id: 74 bits are used of the 80. */
const ID_RANDOM_BYTES = 10;
const idRandom = Buffer.alloc(4000);
let idRandomAt = idRandom.length;
let idMs = -1;

const NO_HEADERS: readonly string[] = [];

/**
 * Every request header in one req.forEach pass: the fixed ones the pipeline
 * reads, a route's extra ones, and how many Content-Length headers came.
 * uWS's getHeader() returns only the first of repeated headers, so a second
 * Content-Length (request smuggling, issue 30 item 8) is visible only this
 * way; one pass costs about what the six getHeader() calls it replaces did.
 * The first occurrence of each header wins, as with getHeader(). One shared
 * instance: forEach calls back synchronously, so scans never overlap.
 */
class HeaderScan {
  authorization = '';
  xApiKey = '';
  contentType = '';
  contentLength = '';
  ifNoneMatch = '';
  idempotencyKey = '';
  traceparent = '';
  lengths = 0;
  private seen = 0;
  private extraNames: readonly string[] = NO_HEADERS;
  extra: string[] = [];

  run(req: HttpRequest, extraNames: readonly string[] | undefined): void {
    this.authorization = this.xApiKey = this.contentType = this.contentLength = this.ifNoneMatch = this.idempotencyKey = this.traceparent = '';
    this.lengths = 0;
    this.seen = 0;
    this.extraNames = extraNames ?? NO_HEADERS;
    if (extraNames !== undefined) this.extra = extraNames.map(() => '');
    req.forEach(this.visit);
  }

  /** Sets a fixed header's value on its first occurrence (bit `bit` of `seen`). */
  private first(bit: number): boolean {
    if ((this.seen & bit) !== 0) return false;
    this.seen |= bit;
    return true;
  }

  private readonly visit = (name: string, value: string): void => {
    switch (name) {
      case 'authorization':
        if (this.first(1)) this.authorization = value;
        return;
      case 'x-api-key':
        if (this.first(2)) this.xApiKey = value;
        return;
      case 'content-type':
        if (this.first(4)) this.contentType = value;
        return;
      case 'content-length':
        this.lengths++;
        if (this.first(8)) this.contentLength = value;
        return;
      case 'if-none-match':
        if (this.first(16)) this.ifNoneMatch = value;
        return;
      case 'idempotency-key':
        if (this.first(32)) this.idempotencyKey = value;
        return;
      case 'traceparent':
        if (this.first(64)) this.traceparent = value;
        return;
    }
    if (this.extraNames.length === 0) return;
    const i = this.extraNames.indexOf(name);
    // A route's extra headers are never the fixed ones above (a handful, so their bits fit).
    if (i >= 0 && (this.seen & (128 << i)) === 0) {
      this.seen |= 128 << i;
      this.extra[i] = value;
    }
  };
}

const scan = new HeaderScan();

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
  /** The caller's W3C trace context, continued by a traced call ('' when absent). */
  readonly traceparent: string;
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
  /**
   * The request carried more than one Content-Length header: the server
   * answers 400 and closes the connection, and no handler runs.
   */
  readonly repeatedLength: boolean;
  /** SHA-256 of the presented API key, set by a model route's key check (so the pipeline does not hash it again). */
  keyHash: Buffer | null = null;
  /** Called once when the client goes away before the response is complete. */
  onAbort: (() => void) | null = null;
  /** The error code answered (its envelope's), for the refusals metric; null when none. */
  refusal: string | null = null;
  /** Filled by authentication, for the request log line. */
  orgId: string | null = null;
  keyId: string | null = null;
  /** Set by a model call (its model, supplier, tokens, charge, timings), for the request log line; null elsewhere. */
  call: LoggedCall | null = null;

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
    const extra = route.headers;
    scan.run(req, extra);
    this.authorization = scan.authorization;
    this.xApiKey = scan.xApiKey;
    this.contentType = scan.contentType;
    this.contentLength = scan.contentLength;
    this.ifNoneMatch = scan.ifNoneMatch;
    this.idempotencyKey = scan.idempotencyKey;
    this.traceparent = scan.traceparent;
    this.repeatedLength = scan.lengths > 1;
    if (extra === undefined) {
      this.headers = NO_HEADERS;
      this.query = '';
    } else {
      this.headers = scan.extra;
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
