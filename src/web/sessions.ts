// Console sessions in the store. The cookie holds a random 32-byte token;
// the store keeps its SHA-256 only. Each console request looks its session up
// with one indexed query (about 0.1 ms): console requests are not the
// model-call path, and reading the row every time means a sign-out, an
// expiry or a disabled account takes effect on every worker and instance at
// once, with no cache to invalidate.
//
// An operator's session is bound to the admin token it was exchanged for
// (issue 30 item 7): its cookie token is 16 random bytes and a 16-byte
// HMAC-SHA256 of them under that admin token. A session is an operator's only
// while the gateway's admin token still makes the same MAC, so changing the
// token (or removing it) ends every operator session on the next request,
// with nothing about the token kept in the store and no extra query.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Pool } from '../store/pool.js';

export const COOKIE = 'tg_session';

export interface Session {
  /** null: an operator's session (the admin token exchanged). */
  accountId: string | null;
  orgId: string | null;
  csrfToken: string;
  expiresAt: Date;
  email: string | null;
  name: string | null;
}

function hashOf(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

const NONCE_BYTES = 16;

function operatorMac(nonce: Buffer, adminToken: string): Buffer {
  return createHmac('sha256', adminToken).update('tollgate operator session\0').update(nonce).digest().subarray(0, 32 - NONCE_BYTES);
}

/** Whether an operator session's token was made under this admin token (constant time); with none configured, no operator session is live. */
export function madeUnder(token: string, adminToken: string | null): boolean {
  if (adminToken === null) return false;
  const raw = Buffer.from(token, 'base64url');
  if (raw.length !== 32) return false;
  return timingSafeEqual(raw.subarray(NONCE_BYTES), operatorMac(raw.subarray(0, NONCE_BYTES), adminToken));
}

/**
 * A new session: `who.orgId` null is the operator's, which needs the admin
 * token it is exchanged for (its token carries that token's MAC).
 */
export async function createSession(
  pool: Pool,
  who: { accountId: string | null; orgId: string | null },
  ttlMs: number,
  adminToken: string | null,
): Promise<{ token: string; csrfToken: string; expiresAt: Date }> {
  let raw: Buffer;
  if (who.orgId === null) {
    if (adminToken === null) throw new Error('an operator session needs the admin token it is made from');
    const nonce = randomBytes(NONCE_BYTES);
    raw = Buffer.concat([nonce, operatorMac(nonce, adminToken)]);
  } else {
    raw = randomBytes(32);
  }
  const token = raw.toString('base64url');
  const csrfToken = randomBytes(24).toString('base64url');
  const expiresAt = new Date(Date.now() + ttlMs);
  await pool.query('INSERT INTO console_sessions (token_hash, account_id, org_id, csrf_token, expires_at) VALUES ($1, $2, $3, $4, $5)', [
    hashOf(token),
    who.accountId,
    who.orgId,
    csrfToken,
    expiresAt,
  ]);
  return { token, csrfToken, expiresAt };
}

/**
 * The live session of a token: not revoked, not expired, its account not
 * disabled, and, for the operator's, made under the current `adminToken`.
 */
export async function findSession(pool: Pool, token: string, adminToken: string | null): Promise<Session | null> {
  if (token.length !== 43) return null;
  const { rows } = await pool.query(
    `SELECT s.account_id, s.org_id, s.csrf_token, s.expires_at, a.email, a.display_name
       FROM console_sessions s LEFT JOIN console_accounts a ON a.id = s.account_id
      WHERE s.token_hash = $1 AND s.revoked_at IS NULL AND s.expires_at > now()
        AND (s.account_id IS NULL OR a.disabled_at IS NULL)`,
    [hashOf(token)],
  );
  const r = rows[0];
  if (r === undefined) return null;
  if (r.org_id === null && !madeUnder(token, adminToken)) return null;
  return { accountId: r.account_id, orgId: r.org_id, csrfToken: r.csrf_token, expiresAt: r.expires_at, email: r.email, name: r.display_name };
}

export async function revokeSession(pool: Pool, token: string): Promise<void> {
  await pool.query('UPDATE console_sessions SET revoked_at = now() WHERE token_hash = $1 AND revoked_at IS NULL', [hashOf(token)]);
}

export async function revokeAccountSessions(pool: Pool, accountId: string): Promise<void> {
  await pool.query('UPDATE console_sessions SET revoked_at = now() WHERE account_id = $1 AND revoked_at IS NULL', [accountId]);
}

export function readCookie(header: string, name: string): string | null {
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}

export function sessionCookie(token: string, maxAgeSeconds: number, secure: boolean): string {
  // Path=/console: the cookie never goes with model calls or the catalog page.
  return `${COOKIE}=${token}; Path=/console; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secure ? '; Secure' : ''}`;
}
