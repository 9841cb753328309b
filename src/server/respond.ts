// Writing a whole (non-streamed) response. Every write is corked: after an
// await we are outside uWS's implicit cork and each header would otherwise be
// its own syscall.
import { renderError } from '../errors/envelopes.js';
import { asGatewayError } from '../errors/gateway-error.js';
import type { RequestContext } from './context.js';
import { statusLine } from './status.js';

export const JSON_TYPE = 'application/json';

/** Set while the process drains: responses then close their connection. */
export const drainState = { draining: false };

export function send(
  ctx: RequestContext,
  status: number,
  contentType: string | null,
  body: string | Buffer,
  headers: ReadonlyArray<readonly [string, string]> | null = null,
  closeConnection = false,
): void {
  if (ctx.aborted || ctx.responded) return;
  const close = closeConnection || drainState.draining;
  ctx.responded = true;
  ctx.status = status;
  const res = ctx.res;
  res.cork(() => {
    res.writeStatus(statusLine(status));
    res.writeHeader('X-Request-Id', ctx.requestId);
    if (contentType !== null) res.writeHeader('Content-Type', contentType);
    if (headers !== null) for (const [k, v] of headers) res.writeHeader(k, v);
    if (status === 304 || status === 204) res.endWithoutBody(0, close);
    else res.end(body, close);
  });
  ctx.finish();
}

export function sendJson(ctx: RequestContext, status: number, json: string | Buffer, headers: ReadonlyArray<readonly [string, string]> | null = null): void {
  send(ctx, status, JSON_TYPE, json, headers);
}

/**
 * A JSON reply in parts (surfaces/surface.ts, ReplyParts), for large replies:
 * the parts are written one after the other with one Content-Length, never
 * joined, and only as fast as the socket takes them (tryEnd; the rest on
 * onWritable), so a 2.8 MB embeddings reply costs the event loop neither a
 * string encoding nor a copy into uWS's backpressure buffer, and no one
 * slice of it holds the loop.
 */
export function sendJsonParts(ctx: RequestContext, status: number, parts: ReadonlyArray<string | Uint8Array>): void {
  if (ctx.aborted || ctx.responded) return;
  // Text parts are the small ones around the bytes (ids, usage): encoded here.
  const pieces = parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : p)).filter((p) => p.byteLength > 0);
  if (drainState.draining) {
    // tryEnd cannot close the connection after the body: the rare draining case joins them and ends as send() does.
    send(ctx, status, JSON_TYPE, Buffer.concat(pieces));
    return;
  }
  let total = 0;
  for (const p of pieces) total += p.byteLength;
  ctx.responded = true;
  ctx.status = status;
  const res = ctx.res;
  let index = 0;
  /** The response's body offset where pieces[index] starts. */
  let pieceStart = 0;
  // Writes from body offset `offset` on until the socket pushes back; true when all is written (or the client left).
  const writeFrom = (offset: number): boolean => {
    while (index < pieces.length) {
      const piece = pieces[index]!;
      const skip = offset - pieceStart;
      const [ok, done] = res.tryEnd(skip === 0 ? piece : piece.subarray(skip), total);
      if (done) {
        index = pieces.length;
        return true;
      }
      if (!ok) return false;
      pieceStart += piece.byteLength;
      offset = pieceStart;
      index++;
    }
    return true;
  };
  let finished = false;
  res.cork(() => {
    res.writeStatus(statusLine(status));
    res.writeHeader('X-Request-Id', ctx.requestId);
    res.writeHeader('Content-Type', JSON_TYPE);
    finished = writeFrom(0);
  });
  if (!finished) {
    // uWS calls this when the socket drains, with the body offset it reached; never after the client left.
    res.onWritable((offset) => {
      if (ctx.aborted) return true;
      let ok = false;
      res.cork(() => {
        ok = writeFrom(offset);
      });
      return ok;
    });
  }
  ctx.finish();
}

/**
 * Answers with the route's error envelope; anything not a GatewayError is an
 * internal error. `closeConnection` is for refusals sent before the request
 * body was consumed.
 */
export function sendError(ctx: RequestContext, error: unknown, extraHeaders: Array<[string, string]> | null = null, closeConnection = false): void {
  const err = asGatewayError(error);
  ctx.refusal = err.code;
  const headers: Array<[string, string]> = extraHeaders ?? [];
  if (err.retryAfterSeconds !== null) headers.push(['Retry-After', String(err.retryAfterSeconds)]);
  if (err.code === 'invalid_api_key') headers.push(['WWW-Authenticate', 'Bearer']);
  send(ctx, err.status, JSON_TYPE, renderError(ctx.route.envelope, err, ctx.requestId), headers.length > 0 ? headers : null, closeConnection);
}
