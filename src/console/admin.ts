// The console API is the operator's: it opens only to Authorization: Bearer
// <ADMIN_TOKEN>, compared in constant time. With no ADMIN_TOKEN configured the
// console routes are not registered at all, so every path answers 404.
import { createHash, timingSafeEqual } from 'node:crypto';
import { GatewayError } from '../errors/gateway-error.js';
import type { RequestContext, Route } from '../server/context.js';
import { sendJson } from '../server/respond.js';

type Headers = ReadonlyArray<readonly [string, string]>;

/** Console answers name credentials and money: never cacheable. */
export const NO_STORE: Headers = [['Cache-Control', 'no-store']];
/** An Idempotency-Key repeat answered from the first creation. */
export const REPLAYED: Headers = [...NO_STORE, ['Idempotent-Replayed', 'true']];

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

export function adminCheck(adminToken: string): (ctx: RequestContext) => void {
  const expected = digest(adminToken);
  return (ctx) => {
    const header = ctx.authorization;
    const presented = header.startsWith('Bearer ') ? header.slice(7) : '';
    // Hashing both sides makes the comparison length-independent.
    if (!timingSafeEqual(digest(presented), expected)) throw new GatewayError('invalid_api_key');
  };
}

/**
 * How console routes are built: every one answers in the REST envelope and
 * checks the admin token as its `authorize` hook, which the server runs
 * before it looks at the path, the Content-Type or the body: an
 * unauthenticated call gets the same 401 whatever it sends, and its body is
 * never read or parsed (issue 12 item 4).
 */
export function consoleRouteKit(adminToken: string) {
  const admin = adminCheck(adminToken);
  return {
    route(method: Route['method'], path: string, readsBody: boolean, fn: (ctx: RequestContext) => Promise<void>): Route {
      return {
        method,
        path,
        surface: 'console',
        envelope: 'rest',
        readsBody,
        authorize: admin,
        handle: fn,
      };
    },
    answer(ctx: RequestContext, status: number, body: unknown, headers: Headers = NO_STORE): void {
      sendJson(ctx, status, JSON.stringify(body), headers);
    },
  };
}
