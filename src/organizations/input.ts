// What an operator may send to create an organization, edit it (name and
// quotas) and credit it: the one validation the console API and the
// `tollgate` command share, so both refuse the same things with the same
// field_details. Strict: unknown members are refused, not ignored.
import { GatewayError, type FieldDetail } from '../errors/gateway-error.js';
import { MAX_MONEY, moneyTooLarge, parseMoney, type Funding } from '../money/money.js';

export interface CreditInput {
  amount: number;
  target: Funding;
  /** ISO 8601; package credits only. */
  expiresAt: string | null;
  note: string | null;
}

export interface OrganizationInput {
  name: string;
  balanceMicros: number;
}

export interface OrganizationEdit {
  name?: string;
  /** null: back to the configured default. */
  quotaPerSecond?: number | null;
  quotaPerMinute?: number | null;
}

const MAX_NOTE = 500;
const MAX_QUOTA = 60_000_000;
const MAX_NAME = 200;
/** A note may hold tabs and line breaks; nothing else below 0x20, nor DEL. */
const NOTE_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f]/;
/** A name is one line: no C0 or C1 control character at all (tab and line breaks included), no line or paragraph separator. */
const NAME_CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

function object(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new GatewayError('invalid_request', { param: '(body)', fieldDetails: [{ field: '(body)', issue: 'must be a JSON object' }] });
  }
  return body as Record<string, unknown>;
}

function unknownMembers(b: Record<string, unknown>, known: string[], details: FieldDetail[]): void {
  for (const k of Object.keys(b)) if (!known.includes(k)) details.push({ field: k, issue: 'unknown member' });
}

function done<T>(details: FieldDetail[], value: T): T {
  if (details.length > 0) throw new GatewayError('invalid_request', { param: details[0].field, fieldDetails: details });
  return value;
}

/**
 * A name an operator gives (an organization's, on create and edit alike, and
 * its people's console accounts), trimmed; an issue in `details` when it is not one.
 */
export function displayName(v: unknown, details: FieldDetail[]): string {
  const name = typeof v === 'string' ? v.trim() : '';
  if (name === '' || name.length > MAX_NAME || NAME_CONTROL.test(name)) {
    details.push({ field: 'name', issue: `must be a non-empty string of at most ${MAX_NAME} characters, with no control characters` });
  }
  return name;
}

export function parseOrganizationInput(body: unknown): OrganizationInput {
  const b = object(body);
  const details: FieldDetail[] = [];
  unknownMembers(b, ['name', 'balance'], details);
  const name = displayName(b.name, details);
  const balanceMicros = b.balance === undefined ? 0 : parseMoney(b.balance);
  if (moneyTooLarge(b.balance)) details.push({ field: 'balance', issue: `must be at most ${MAX_MONEY}` });
  else if (balanceMicros === null) details.push({ field: 'balance', issue: 'must be a non-negative decimal string such as "10.00"' });
  return done(details, { name, balanceMicros: balanceMicros! });
}

export function parseCreditInput(body: unknown, now = Date.now()): CreditInput {
  const b = object(body);
  const details: FieldDetail[] = [];
  unknownMembers(b, ['amount', 'target', 'expires_at', 'note'], details);
  const amount = parseMoney(b.amount);
  if (moneyTooLarge(b.amount)) details.push({ field: 'amount', issue: `must be at most ${MAX_MONEY}` });
  else if (amount === null || amount <= 0) details.push({ field: 'amount', issue: 'must be a positive decimal string such as "10.00"' });
  const target = b.target ?? 'balance';
  if (target !== 'balance' && target !== 'package') details.push({ field: 'target', issue: 'must be "balance" or "package"' });
  let expiresAt: string | null = null;
  if (b.expires_at !== undefined && b.expires_at !== null) {
    const at = typeof b.expires_at === 'string' ? Date.parse(b.expires_at) : NaN;
    if (target !== 'package') details.push({ field: 'expires_at', issue: 'applies to package credits only' });
    else if (!Number.isFinite(at)) details.push({ field: 'expires_at', issue: 'must be an ISO 8601 timestamp' });
    else if (at <= now) details.push({ field: 'expires_at', issue: 'must be in the future' });
    else expiresAt = new Date(at).toISOString();
  }
  let note: string | null = null;
  if (b.note !== undefined && b.note !== null) {
    if (typeof b.note !== 'string' || b.note.length > MAX_NOTE || NOTE_CONTROL.test(b.note)) {
      details.push({ field: 'note', issue: `must be a string of at most ${MAX_NOTE} characters` });
    } else note = b.note;
  }
  return done(details, { amount: amount!, target: target as Funding, expiresAt, note });
}

function quota(v: unknown, field: string, details: FieldDetail[]): number | null | undefined {
  if (v === undefined || v === null) return v;
  if (typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= MAX_QUOTA) return v;
  details.push({ field, issue: `must be an integer from 1 to ${MAX_QUOTA}, or null for the default` });
  return undefined;
}

export function parseOrganizationEdit(body: unknown): OrganizationEdit {
  const b = object(body);
  const details: FieldDetail[] = [];
  unknownMembers(b, ['name', 'quota_per_second', 'quota_per_minute'], details);
  const out: OrganizationEdit = {};
  if (b.name !== undefined) out.name = displayName(b.name, details);
  if ('quota_per_second' in b) out.quotaPerSecond = quota(b.quota_per_second, 'quota_per_second', details);
  if ('quota_per_minute' in b) out.quotaPerMinute = quota(b.quota_per_minute, 'quota_per_minute', details);
  if (Object.keys(b).length === 0) details.push({ field: '(body)', issue: 'name at least one of name, quota_per_second, quota_per_minute' });
  return done(details, out);
}
