// Console sessions in the store. The cookie holds a random 32-byte token;
// the store keeps its SHA-256 only. Each console request looks its session up
// with one indexed query (about 0.1 ms): console requests are not the
// model-call path, and reading the row every time means a sign-out, an
// expiry or a disabled account takes effect on every worker and instance at
// once, with no cache to invalidate.
import { createHash, randomBytes } from 'node:crypto';
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

export async function createSession(pool: Pool, who: { accountId: string | null; orgId: string | null }, ttlMs: number): Promise<{ token: string; csrfToken: string; expiresAt: Date }> {
  const token = randomBytes(32).toString('base64url');
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

/** The live session of a token: not revoked, not expired, its account not disabled. */
export async function findSession(pool: Pool, token: string): Promise<Session | null> {
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
