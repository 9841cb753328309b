// Where a presented key is read from (spec, Authentication rules 1–5):
//  1. `Authorization: Bearer <key>` on every authenticated operation, and only
//     headers: a query string, cookie or body is never read (this function is
//     only ever given the two header values).
//  3. `x-api-key: <key>` only on surfaces whose carrier is
//     'bearer_or_x_api_key' (POST /v1/messages and /v1/messages/count_tokens).
//  4. When both are present, an Authorization header that is present and well
//     formed wins and x-api-key is not read, so a disagreement is no refusal.
//     An Authorization that is not a well-formed bearer key (e.g. a proxy's
//     Basic credentials) does not hide a well-formed x-api-key.
//  5. Both carriers feed the same lookup and the same single refusal.
import { isWellFormedKey } from './key-format.js';
import type { Carrier } from './types.js';

/** The token of `Bearer <token>` (scheme case-insensitive, RFC 9110 §11.1), or '' when it is not a well-formed key. */
export function bearerKey(authorization: string): string {
  if (authorization.length < 8 || authorization.slice(0, 7).toLowerCase() !== 'bearer ') return '';
  const token = authorization.slice(7).trim();
  return isWellFormedKey(token) ? token : '';
}

/** The presented key, or '' for "none or malformed" (the caller refuses both the same way). */
export function presentedKey(authorization: string, xApiKey: string, carrier: Carrier): string {
  const bearer = bearerKey(authorization);
  if (bearer !== '' || carrier !== 'bearer_or_x_api_key') return bearer;
  const bare = xApiKey.trim();
  return isWellFormedKey(bare) ? bare : '';
}
