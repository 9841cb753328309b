// Console accounts: an organization's people, created by an operator. Input
// validated here for the console API and the `tollgate accounts` command
// alike; the password is kept only as its scrypt hash.
import { randomUUID } from 'node:crypto';
import { GatewayError, type FieldDetail } from '../errors/gateway-error.js';
import { displayName } from '../organizations/input.js';
import type { Pool } from '../store/pool.js';
import { hashPassword, MAX_PASSWORD, MIN_PASSWORD } from '../web/passwords.js';

export interface AccountRow {
  id: string;
  org_id: string;
  email: string;
  display_name: string;
  password_hash: string;
  created_at: Date;
  disabled_at: Date | null;
}

export interface AccountInput {
  email: string;
  name: string;
  password: string;
}

const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,189}$/;

export function parseAccountInput(body: unknown): AccountInput {
  const details: FieldDetail[] = [];
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new GatewayError('invalid_request', { param: '(body)', fieldDetails: [{ field: '(body)', issue: 'must be a JSON object' }] });
  const b = body as Record<string, unknown>;
  for (const k of Object.keys(b)) if (k !== 'email' && k !== 'name' && k !== 'password') details.push({ field: k, issue: 'unknown member' });
  const email = typeof b.email === 'string' ? b.email.trim() : '';
  if (!EMAIL.test(email) || email.length > 254) details.push({ field: 'email', issue: 'must be an email address of at most 254 characters' });
  const name = displayName(b.name, details);
  const password = typeof b.password === 'string' ? b.password : '';
  if (password.length < MIN_PASSWORD || password.length > MAX_PASSWORD) details.push({ field: 'password', issue: `must be ${MIN_PASSWORD} to ${MAX_PASSWORD} characters` });
  if (details.length > 0) throw new GatewayError('invalid_request', { param: details[0].field, fieldDetails: details });
  return { email, name, password };
}

export function accountView(row: AccountRow): Record<string, unknown> {
  return {
    object: 'account',
    id: row.id,
    organization_id: row.org_id,
    email: row.email,
    name: row.display_name,
    status: row.disabled_at === null ? 'active' : 'disabled',
    created_at: row.created_at.toISOString(),
  };
}

const COLUMNS = 'id, org_id, email, display_name, password_hash, created_at, disabled_at';

export async function createAccount(pool: Pool, orgId: string, input: AccountInput): Promise<AccountRow> {
  const hash = await hashPassword(input.password);
  try {
    const { rows } = await pool.query<AccountRow>(
      `INSERT INTO console_accounts (id, org_id, email, display_name, password_hash) VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}`,
      [randomUUID(), orgId, input.email, input.name, hash],
    );
    return rows[0];
  } catch (err) {
    if ((err as { code?: string }).code === '23505') throw new GatewayError('email_taken');
    if ((err as { code?: string }).code === '23503') throw new GatewayError('organization_not_found');
    throw err;
  }
}

export async function listAccounts(pool: Pool, orgId: string): Promise<AccountRow[]> {
  const { rows } = await pool.query<AccountRow>(`SELECT ${COLUMNS} FROM console_accounts WHERE org_id = $1 ORDER BY created_at, id`, [orgId]);
  return rows;
}

export async function getAccount(pool: Pool, id: string): Promise<AccountRow | null> {
  const { rows } = await pool.query<AccountRow>(`SELECT ${COLUMNS} FROM console_accounts WHERE id = $1`, [id]);
  return rows[0] ?? null;
}

export async function accountByEmail(pool: Pool, email: string): Promise<AccountRow | null> {
  const { rows } = await pool.query<AccountRow>(`SELECT ${COLUMNS} FROM console_accounts WHERE lower(email) = lower($1)`, [email]);
  return rows[0] ?? null;
}

/** Disables an account and ends its sessions in one statement each; idempotent. */
export async function disableAccount(pool: Pool, id: string): Promise<AccountRow | null> {
  const { rows } = await pool.query<AccountRow>(`UPDATE console_accounts SET disabled_at = coalesce(disabled_at, now()) WHERE id = $1 RETURNING ${COLUMNS}`, [id]);
  await pool.query('UPDATE console_sessions SET revoked_at = now() WHERE account_id = $1 AND revoked_at IS NULL', [id]);
  return rows[0] ?? null;
}
