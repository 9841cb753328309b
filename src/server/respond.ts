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
