// The console API is the operator's: it opens only to Authorization: Bearer
// <ADMIN_TOKEN>, compared in constant time. With no ADMIN_TOKEN configured the
// console routes are not registered at all, so every path answers 404.
import { createHash, timingSafeEqual } from 'node:crypto';
import { GatewayError } from '../errors/gateway-error.js';
import type { RequestContext } from '../server/context.js';

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
