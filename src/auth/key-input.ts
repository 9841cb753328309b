// Validation of what an operator may send to create or edit a key, shared by
// the console API and the `tollgate` command so both refuse the same things
// with the same field_details. Strict: an unknown member is refused rather
// than silently ignored (a typo in a scope must not make a key unrestricted).
import { createHash } from 'node:crypto';
import type { ModalityCode } from '../catalog/types.js';
import { GatewayError, type FieldDetail } from '../errors/gateway-error.js';
import type { Funding, KeyScope } from './types.js';
import { isUuid } from '../store/uuid.js';

export interface KeyCreateInput {
  name: string;
  scope: KeyScope | null;
  binding: string;
  funding: Funding;
  /** ISO 8601, or null for a key that never expires. */
  expiresAt: string | null;
  /** Calls per sliding minute, or null for no quota of the key's own. */
  quotaPerMinute: number | null;
}

export interface KeyEditInput {
  version: number;
  name?: string;
  /** null: make the key unrestricted. */
  scope?: KeyScope | null;
  funding?: Funding;
  expiresAt?: string | null;
  /** null: remove the key's quota. */
  quotaPerMinute?: number | null;
}

export const DEFAULT_BINDING = 'organization';
const MODALITIES: readonly ModalityCode[] = ['text_generation', 'embeddings', 'image_generation'];
const FUNDINGS: readonly Funding[] = ['balance', 'package'];
const CONTROL = /[\u0000-\u001f\u007f]/;
const MAX_NAME = 200;
const MAX_BINDING = 100;
const MAX_AXIS = 256;
/** A key's quota per minute: a whole number in this range, or null for none (migration 009's CHECK says the same). */
export const MAX_KEY_QUOTA = 1_000_000;
const SCOPE_AXES = ['modality_codes', 'model_ids', 'vendor_ids'] as const;
/** Members fixed at creation (or never settable): naming one in an edit is a 422, not a 400. */
const IMMUTABLE = ['binding', 'id', 'organization_id', 'prefix', 'last4', 'created_at', 'secret'];


function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function fail(details: FieldDetail[]): never {
  throw new GatewayError('invalid_request', { param: details[0].field, fieldDetails: details });
}

function label(v: unknown, field: string, max: number, details: FieldDetail[]): string | undefined {
  if (typeof v !== 'string' || v.trim() === '') details.push({ field, issue: 'must be a non-empty string' });
  else if (v.trim().length > max) details.push({ field, issue: `must be at most ${max} characters` });
  else if (CONTROL.test(v)) details.push({ field, issue: 'must not contain control characters' });
  else return v.trim();
  return undefined;
}

function axis(v: unknown, field: string, valid: (s: string) => boolean, issue: string, details: FieldDetail[]): string[] | undefined {
  if (!Array.isArray(v) || v.length === 0) {
    details.push({ field, issue: 'must be a non-empty array (leave the member out to allow every value)' });
    return undefined;
  }
  if (v.length > MAX_AXIS) {
    details.push({ field, issue: `must list at most ${MAX_AXIS} values` });
    return undefined;
  }
  const out = new Set<string>();
  v.forEach((item, i) => {
    if (typeof item === 'string' && valid(item)) out.add(item.toLowerCase());
    else details.push({ field: `${field}[${i}]`, issue });
  });
  // Sorted and deduplicated: the same scope always compares (and hashes) equal.
  return [...out].sort();
}

/** `null`, `"unrestricted"` and `{}` all mean unrestricted (null). */
export function parseScope(v: unknown, details: FieldDetail[]): KeyScope | null | undefined {
  if (v === null || v === 'unrestricted') return null;
  if (!isObject(v)) {
    details.push({ field: 'scope', issue: 'must be "unrestricted" or an object with modality_codes, model_ids and/or vendor_ids' });
    return undefined;
  }
  const scope: KeyScope = {};
  for (const k of Object.keys(v)) {
    if (!(SCOPE_AXES as readonly string[]).includes(k)) details.push({ field: `scope.${k}`, issue: 'unknown member' });
  }
  const before = details.length;
  if (v.modality_codes !== undefined) {
    const codes = axis(v.modality_codes, 'scope.modality_codes', (s) => (MODALITIES as readonly string[]).includes(s), `must be one of ${MODALITIES.join(', ')}`, details);
    if (codes) scope.modality_codes = codes as ModalityCode[];
  }
  if (v.model_ids !== undefined) {
    const ids = axis(v.model_ids, 'scope.model_ids', isUuid, 'must be a catalog model_id (UUID)', details);
    if (ids) scope.model_ids = ids;
  }
  if (v.vendor_ids !== undefined) {
    const ids = axis(v.vendor_ids, 'scope.vendor_ids', isUuid, 'must be a catalog vendor id (UUID)', details);
    if (ids) scope.vendor_ids = ids;
  }
  if (details.length > before) return undefined;
  return Object.keys(scope).length === 0 ? null : scope;
}

function expiry(v: unknown, now: number, details: FieldDetail[]): string | null | undefined {
  if (v === null) return null;
  const ms = typeof v === 'string' && /^\d{4}-\d{2}-\d{2}T/.test(v) ? Date.parse(v) : NaN;
  if (Number.isNaN(ms)) details.push({ field: 'expires_at', issue: 'must be an ISO 8601 date-time (e.g. 2030-01-31T00:00:00Z) or null' });
  else if (ms <= now) details.push({ field: 'expires_at', issue: 'must be in the future' });
  else return new Date(ms).toISOString();
  return undefined;
}

function funding(v: unknown, details: FieldDetail[]): Funding | undefined {
  if (typeof v === 'string' && (FUNDINGS as readonly string[]).includes(v)) return v as Funding;
  details.push({ field: 'funding', issue: 'must be "balance" or "package"' });
  return undefined;
}

function quota(v: unknown, details: FieldDetail[]): number | null | undefined {
  if (v === null) return null;
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 1 && v <= MAX_KEY_QUOTA) return v;
  details.push({ field: 'quota_per_minute', issue: `must be a whole number of calls from 1 to ${MAX_KEY_QUOTA}, or null for no quota` });
  return undefined;
}

function unknownMembers(body: Record<string, unknown>, allowed: readonly string[], details: FieldDetail[]): void {
  for (const k of Object.keys(body)) if (!allowed.includes(k)) details.push({ field: k, issue: 'unknown member' });
}

export function parseCreateInput(body: unknown, now = Date.now()): KeyCreateInput {
  if (!isObject(body)) fail([{ field: '(body)', issue: 'must be a JSON object' }]);
  const details: FieldDetail[] = [];
  unknownMembers(body, ['name', 'scope', 'binding', 'funding', 'expires_at', 'quota_per_minute'], details);
  const name = label(body.name, 'name', MAX_NAME, details);
  const scope = body.scope === undefined ? null : parseScope(body.scope, details);
  const binding = body.binding === undefined ? DEFAULT_BINDING : label(body.binding, 'binding', MAX_BINDING, details);
  const fund = body.funding === undefined ? 'balance' : funding(body.funding, details);
  const expiresAt = body.expires_at === undefined ? null : expiry(body.expires_at, now, details);
  const perMinute = body.quota_per_minute === undefined ? null : quota(body.quota_per_minute, details);
  if (details.length > 0) fail(details);
  return { name: name!, scope: scope!, binding: binding!, funding: fund!, expiresAt: expiresAt!, quotaPerMinute: perMinute! };
}

export function parseEditInput(body: unknown, now = Date.now()): KeyEditInput {
  if (!isObject(body)) fail([{ field: '(body)', issue: 'must be a JSON object' }]);
  const fixed = IMMUTABLE.filter((k) => k in body).map((field) => ({ field, issue: 'is fixed when the key is created and cannot be edited' }));
  if (fixed.length > 0) throw new GatewayError('immutable_field', { param: fixed[0].field, fieldDetails: fixed });
  const details: FieldDetail[] = [];
  unknownMembers(body, ['version', 'name', 'scope', 'funding', 'expires_at', 'quota_per_minute'], details);
  const out: KeyEditInput = { version: 0 };
  if (typeof body.version !== 'number' || !Number.isSafeInteger(body.version) || body.version < 1) {
    details.push({ field: 'version', issue: 'must be the key\'s current version number (a positive integer)' });
  } else out.version = body.version;
  if (body.name !== undefined) out.name = label(body.name, 'name', MAX_NAME, details);
  if (body.scope !== undefined) out.scope = parseScope(body.scope, details);
  if (body.funding !== undefined) out.funding = funding(body.funding, details);
  if (body.expires_at !== undefined) out.expiresAt = expiry(body.expires_at, now, details);
  if (body.quota_per_minute !== undefined) out.quotaPerMinute = quota(body.quota_per_minute, details);
  if (details.length === 0 && Object.keys(out).length === 1) {
    details.push({ field: '(body)', issue: 'name at least one of name, scope, funding, expires_at, quota_per_minute to change' });
  }
  if (details.length > 0) fail(details);
  return out;
}

/** What "the same creation request" means for Idempotency-Key: equal after normalization. */
export function createRequestHash(input: KeyCreateInput): Buffer {
  const s = input.scope;
  const scope = s === null ? null : [s.modality_codes ?? null, s.model_ids ?? null, s.vendor_ids ?? null];
  const fields: unknown[] = [input.name, scope, input.binding, input.funding, input.expiresAt];
  // Only a key with a quota hashes it, so a request hashed before quotas existed still matches its replay.
  if (input.quotaPerMinute !== null) fields.push(input.quotaPerMinute);
  return createHash('sha256').update(JSON.stringify(fields)).digest();
}
