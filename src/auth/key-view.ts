// How a key is shown: to the operator (console API and `tollgate`), and to
// its holder (GET /v1/key). Neither ever carries the secret except the one
// creation answer, which adds it on top of the console object.
import { displayKey } from './key-format.js';
import { keyStatus, type KeyRow } from './key-store.js';
import type { ApiKey, KeyScope } from './types.js';

/** A key with no axis says so in words, not with empty lists. */
export function scopeView(scope: KeyScope | null): 'unrestricted' | KeyScope {
  if (scope === null) return 'unrestricted';
  const out: KeyScope = {};
  if (scope.modality_codes !== undefined) out.modality_codes = scope.modality_codes;
  if (scope.model_ids !== undefined) out.model_ids = scope.model_ids;
  if (scope.vendor_ids !== undefined) out.vendor_ids = scope.vendor_ids;
  return Object.keys(out).length === 0 ? 'unrestricted' : out;
}

const iso = (d: Date | null): string | null => (d === null ? null : d.toISOString());

/** The console's key object: metadata and liveness, never the secret. */
export function consoleKey(row: KeyRow, now = Date.now()): Record<string, unknown> {
  return {
    object: 'api_key',
    id: row.id,
    organization_id: row.org_id,
    name: row.name,
    prefix: row.prefix,
    last4: row.last4,
    display: displayKey(row.prefix, row.last4),
    version: row.version,
    status: keyStatus(row, now),
    scope: scopeView(row.scope),
    binding: row.binding,
    funding: row.funding,
    quota_per_minute: row.quota_per_minute,
    created_at: iso(row.created_at),
    expires_at: iso(row.expires_at),
    revoked_at: iso(row.revoked_at),
  };
}

/**
 * The identity echo: what the presented key is, named by the same fragments
 * as everywhere else. No liveness: the gateway only ever answers for a live
 * key, and which of a caller's keys is which is the console's to say.
 */
export function identityEcho(key: ApiKey): string {
  return JSON.stringify({
    object: 'api_key',
    id: key.id,
    name: key.name,
    prefix: key.prefix,
    last4: key.last4,
    display: displayKey(key.prefix, key.last4),
    version: key.version,
    organization_id: key.orgId,
    scope: scopeView(key.scope),
    binding: key.binding,
    funding: key.funding,
  });
}
