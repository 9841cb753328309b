// Writing a whole (non-streamed) response. Every write is corked: after an
// await we are outside uWS's implicit cork and each header would otherwise be
// its own syscall.
import { renderError } from '../errors/envelopes.js';
import { asGatewayError } from '../errors/gateway-error.js';
import type { RequestContext } from './context.js';
import { statusLine } from './status.js';

/** The request's id, on every reply as X-Request-Id; the messages protocol's clients read it as `request-id` (issue 31 item 8). */
export function writeRequestId(ctx: RequestContext): void {
  ctx.res.writeHeader('X-Request-Id', ctx.requestId);
  if (ctx.route.envelope === 'messages') ctx.res.writeHeader('request-id', ctx.requestId);
}

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
    writeRequestId(ctx);
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
 * Bytes written to the socket in one event-loop task when an answer is
 * written in parts: copying 128 KB into the kernel takes tens of µs, so no
 * task of a megabytes answer holds the loop long (issue 33), while a 2.8 MB
 * embeddings answer still takes ~22 tasks, not thousands.
 */
export const WRITE_SLICE_BYTES = 131072;

/**
 * A JSON reply in parts (surfaces/surface.ts, ReplyParts), for large replies:
 * the parts are written one after the other with one Content-Length, never
 * joined, in slices of WRITE_SLICE_BYTES, each slice a task of its own (the
 * next one after setImmediate, so whatever else waits runs between them), and
 * only as fast as the socket takes them (tryEnd; after backpressure, on
 * onWritable). A 2.8 MB embeddings reply costs the event loop neither a
 * string encoding nor a copy into uWS's backpressure buffer, and no one slice
 * of it holds the loop. `sliceBytes`: bench/micro/sliced-write.ts compares sizes.
 * `onWritten` runs once the last byte is handed to uWS (which copies what the
 * socket does not take at once), so the parts' memory may then be reused; it
 * does not run when the client leaves first.
 */
export function sendJsonParts(
  ctx: RequestContext,
  status: number,
  parts: ReadonlyArray<string | Uint8Array>,
  sliceBytes = WRITE_SLICE_BYTES,
  onWritten: (() => void) | null = null,
): void {
  if (ctx.aborted || ctx.responded) return;
  // Text parts are the small ones around the bytes (ids, usage): encoded here.
  const pieces = parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : p)).filter((p) => p.byteLength > 0);
  if (drainState.draining) {
    // tryEnd cannot close the connection after the body: the rare draining case joins them and ends as send() does.
    send(ctx, status, JSON_TYPE, Buffer.concat(pieces));
    onWritten?.();
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
  /** Set once the whole body is written (or uWS has responded); nothing is written after. */
  let done = false;
  const finished = (): void => {
    if (done) return;
    done = true;
    onWritten?.();
  };
  /** Set while the socket pushes back: onWritable, not a scheduled slice, goes on. */
  let blocked = false;
  // Writes one slice from body offset `offset`. Answers whether the socket took it all (false: it pushed back).
  const writeSlice = (offset: number): boolean => {
    while (index < pieces.length && offset >= pieceStart + pieces[index]!.byteLength) pieceStart += pieces[index++]!.byteLength;
    if (index >= pieces.length) {
      finished();
      return true;
    }
    const piece = pieces[index]!;
    const from = offset - pieceStart;
    const slice = piece.subarray(from, Math.min(piece.byteLength, from + sliceBytes));
    const [ok, responded] = res.tryEnd(slice, total);
    if (responded) finished();
    return ok;
  };
  // The slice after `offset`, in a task of its own; stops at backpressure (onWritable resumes) or when the client left.
  const next = (): void => {
    if (ctx.aborted || done || blocked) return;
    let ok = false;
    res.cork(() => {
      ok = writeSlice(res.getWriteOffset());
    });
    if (done) return;
    if (ok) setImmediate(next);
    else blocked = true;
  };
  let ok = false;
  res.cork(() => {
    res.writeStatus(statusLine(status));
    writeRequestId(ctx);
    res.writeHeader('Content-Type', JSON_TYPE);
    ok = writeSlice(0);
  });
  if (!done) {
    // uWS calls this when the socket drains, with the body offset it reached; never after the client left.
    res.onWritable((offset) => {
      if (ctx.aborted || done) return true;
      let taken = false;
      res.cork(() => {
        taken = writeSlice(offset);
      });
      if (!taken) return false;
      blocked = false;
      if (!done) setImmediate(next);
      return true;
    });
    if (ok) setImmediate(next);
    else blocked = true;
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
