// Who may use the console API, checked before anything of the request is
// parsed (issue 12 item 4), in two steps: `precheck`, run by the server before
// it looks at the path, the Content-Type or the body, refuses a call with no
// credential or a wrong admin token without reading its body; `authenticator`
// then checks a session against the store before the body is parsed.
//  - the operator: Authorization: Bearer <ADMIN_TOKEN> (constant-time
//    compare), or an operator session (the admin token exchanged for one);
//  - an organization's person: a session cookie from signing in, which opens
//    only that organization (routes check it with `ownOrg`).
// A session's changes also need its CSRF token in X-CSRF-Token. With no
// ADMIN_TOKEN configured a bearer gets 404, as if the operator API were absent.
import { createHash, timingSafeEqual } from 'node:crypto';
import { GatewayError } from '../errors/gateway-error.js';
import type { RequestContext, Route } from '../server/context.js';
import { nestingError, nestingFault } from '../server/json-depth.js';
import { sendJson } from '../server/respond.js';
import type { Pool } from '../store/pool.js';
import { COOKIE, findSession, readCookie, type Session } from '../web/sessions.js';

type Headers = ReadonlyArray<readonly [string, string]>;

/** Console answers name credentials and money: never cacheable. */
export const NO_STORE: Headers = [['Cache-Control', 'no-store']];
/** An Idempotency-Key repeat answered from the first creation. */
export const REPLAYED: Headers = [...NO_STORE, ['Idempotent-Replayed', 'true']];

/** Request headers every console route reads (ctx.headers, in this order). */
export const CONSOLE_HEADERS = ['cookie', 'x-csrf-token', 'x-forwarded-proto'] as const;
export const H_COOKIE = 0;
export const H_CSRF = 1;
export const H_PROTO = 2;

export type Principal =
  | { role: 'operator'; session: Session | null; token: string | null }
  | { role: 'member'; orgId: string; session: Session; token: string };

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

export function adminCheck(adminToken: string): (presented: string) => boolean {
  const expected = digest(adminToken);
  // Hashing both sides makes the comparison length-independent.
  return (presented) => timingSafeEqual(digest(presented), expected);
}

export interface ConsoleAuth {
  adminToken: string | null;
  pool: Pool;
  /** http.max_json_depth: console bodies nest at most this deep. */
  maxJsonDepth: number;
}

/** An organization's person may act only on their own organization; anything else looks absent. */
export function ownOrg(who: Principal, orgId: string, missing: 'organization_not_found' | 'key_not_found' | 'account_not_found' = 'organization_not_found'): void {
  if (who.role === 'member' && who.orgId !== orgId) throw new GatewayError(missing);
}

/**
 * The server's `authorize` hook for console routes: synchronous, on the
 * headers only. A bearer must be the admin token (constant time); with no
 * bearer there must be a session cookie, which `authenticator` then checks.
 * Anything else gets the one 401 whatever the path, Content-Type or body.
 */
export function precheck(auth: ConsoleAuth): (ctx: RequestContext) => void {
  const admin = auth.adminToken === null ? null : adminCheck(auth.adminToken);
  return (ctx) => {
    const header = ctx.authorization;
    if (header !== '') {
      if (admin === null) throw new GatewayError('not_found');
      if (!admin(header.startsWith('Bearer ') ? header.slice(7) : '')) throw new GatewayError('invalid_api_key');
      return;
    }
    if (readCookie(ctx.headers[H_COOKIE] ?? '', COOKIE) === null) throw new GatewayError('invalid_api_key');
  };
}

export function authenticator(auth: ConsoleAuth): (ctx: RequestContext) => Promise<Principal> {
  const admin = auth.adminToken === null ? null : adminCheck(auth.adminToken);
  return async (ctx) => {
    const header = ctx.authorization;
    if (header !== '') {
      if (admin === null) throw new GatewayError('not_found');
      if (!admin(header.startsWith('Bearer ') ? header.slice(7) : '')) throw new GatewayError('invalid_api_key');
      return { role: 'operator', session: null, token: null };
    }
    const token = readCookie(ctx.headers[H_COOKIE] ?? '', COOKIE);
    // No credential at all: the same 401 an API client always got.
    if (token === null) throw new GatewayError('invalid_api_key');
    const session = await findSession(auth.pool, token, auth.adminToken);
    if (session === null) throw new GatewayError('not_signed_in');
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      const presented = ctx.headers[H_CSRF] ?? '';
      if (presented.length !== session.csrfToken.length || !timingSafeEqual(Buffer.from(presented), Buffer.from(session.csrfToken))) {
        throw new GatewayError('csrf_token_invalid');
      }
    }
    if (session.orgId === null) return { role: 'operator', session, token };
    return { role: 'member', orgId: session.orgId, session, token };
  };
}

/**
 * Parses the body read raw, after the caller is known: an unauthenticated
 * caller never gets its body parsed. The nesting is bounded on the bytes
 * first (JSON.parse and everything after it recurse).
 */
export function parseBody(ctx: RequestContext, maxJsonDepth: number): void {
  const raw = ctx.rawBody;
  if (raw === null) return;
  const fault = nestingFault(raw, maxJsonDepth);
  if (fault !== null) throw nestingError(fault, maxJsonDepth);
  try {
    ctx.body = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new GatewayError('invalid_json');
  }
}

/** How console routes are built: every one authenticates first, then parses, and answers in the REST envelope. */
export function consoleRouteKit(auth: ConsoleAuth) {
  const authorize = precheck(auth);
  const authenticate = authenticator(auth);
  return {
    route(
      method: Route['method'],
      path: string,
      readsBody: boolean,
      fn: (ctx: RequestContext, who: Principal) => Promise<void>,
      opts: { operatorOnly?: boolean } = {},
    ): Route {
      return {
        method,
        path,
        surface: 'console',
        envelope: 'rest',
        readsBody,
        rawBody: readsBody,
        headers: CONSOLE_HEADERS,
        authorize,
        async handle(ctx) {
          const who = await authenticate(ctx);
          if (opts.operatorOnly === true && who.role !== 'operator') throw new GatewayError('operator_only');
          parseBody(ctx, auth.maxJsonDepth);
          await fn(ctx, who);
        },
      };
    },
    answer(ctx: RequestContext, status: number, body: unknown, headers: Headers = NO_STORE): void {
      sendJson(ctx, status, JSON.stringify(body), headers);
    },
  };
}
