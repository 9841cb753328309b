// Every SQL statement about API keys: the reads the authenticator needs (by
// hash, the live set, the change log) and the writes the console API, the
// `tollgate` command and the first-start demo share through
// console/key-service.ts. Writes take a transaction client and record their
// change in api_key_changes; publishing on the bus is the caller's, after
// commit.
import { GatewayError, type FieldDetail } from '../errors/gateway-error.js';
import type { Pool, PoolClient } from '../store/pool.js';
import type { KeyCreateInput, KeyEditInput } from './key-input.js';
import type { NewKey } from './key-format.js';
import type { ApiKey, Funding, KeyScope } from './types.js';

type Db = Pool | PoolClient;

export interface KeyRow {
  id: string;
  org_id: string;
  name: string;
  prefix: string;
  last4: string;
  version: number;
  scope: KeyScope | null;
  binding: string;
  funding: Funding;
  created_at: Date;
  expires_at: Date | null;
  revoked_at: Date | null;
  quota_per_minute: number | null;
}

export type KeyStatus = 'live' | 'revoked' | 'expired';

const COLUMNS = 'id, org_id, name, prefix, last4, version, scope, binding, funding, created_at, expires_at, revoked_at, quota_per_minute';
/** Serializes change-log writers so that seq order is commit order (see migration 002). */
const CHANGE_LOCK = 7_420_002;

export function toApiKey(row: KeyRow): ApiKey {
  return {
    id: row.id,
    orgId: row.org_id,
    name: row.name,
    prefix: row.prefix,
    last4: row.last4,
    version: row.version,
    scope: row.scope,
    binding: row.binding,
    funding: row.funding,
    expiresAt: row.expires_at === null ? null : row.expires_at.getTime(),
    quotaPerMinute: row.quota_per_minute,
  };
}

export function keyStatus(row: KeyRow, now = Date.now()): KeyStatus {
  if (row.revoked_at !== null) return 'revoked';
  if (row.expires_at !== null && row.expires_at.getTime() <= now) return 'expired';
  return 'live';
}

// ---- reads for the authenticator ----

export async function findKeyByHash(db: Db, hash: Buffer): Promise<(KeyRow & { key_hash: Buffer }) | null> {
  // Named: planned once per connection, since every key's first call in each worker asks it.
  const { rows } = await db.query<KeyRow & { key_hash: Buffer }>({ name: 'key_by_hash', text: `SELECT ${COLUMNS}, key_hash FROM api_keys WHERE key_hash = $1`, values: [hash] });
  return rows[0] ?? null;
}

export interface IndexEntry {
  hash: Buffer;
  /** Still counted as live (not revoked); expiry is judged by the index. */
  live: boolean;
  expiresAt: Date | null;
}

/**
 * Every live key hash and the change-log position they are current as of,
 * read in one snapshot so that polling from `seq` misses nothing. (At tens of
 * millions of keys this would want a cursor; one query is right below that.)
 */
export async function loadLiveKeys(pool: Pool): Promise<{ seq: number; keys: IndexEntry[] }> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const seq = (await client.query<{ s: number }>('SELECT coalesce(max(seq), 0)::bigint AS s FROM api_key_changes')).rows[0].s;
    const { rows } = await client.query<{ key_hash: Buffer; expires_at: Date | null }>(
      'SELECT key_hash, expires_at FROM api_keys WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())',
    );
    await client.query('COMMIT');
    return { seq, keys: rows.map((r) => ({ hash: r.key_hash, live: true, expiresAt: r.expires_at })) };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

/**
 * Changed keys after `seq`, each with its current state (so a burst of edits
 * to one key is read as its latest). Every worker runs this when told of a
 * change, and on a timer (every 2 s while it hears notices, every 250 ms while
 * it cannot: key-sync.ts): a named statement is parsed and planned once per
 * connection, which halved what the poll cost the store (2.8 → 1.4 ms/s per
 * worker at 250 ms on the development VM, docs/performance.md).
 */
export async function keyChangesSince(db: Db, seq: number, limit: number): Promise<Array<IndexEntry & { seq: number }>> {
  const { rows } = await db.query<{ seq: number; key_hash: Buffer; revoked: boolean; expires_at: Date | null }>({
    name: 'key_changes_since',
    text: `SELECT c.seq, k.key_hash, k.revoked_at IS NOT NULL AS revoked, k.expires_at
       FROM api_key_changes c JOIN api_keys k ON k.id = c.key_id
      WHERE c.seq > $1 ORDER BY c.seq LIMIT $2`,
    values: [seq, limit],
  });
  return rows.map((r) => ({ seq: r.seq, hash: r.key_hash, live: !r.revoked, expiresAt: r.expires_at }));
}

// ---- reads for the console ----

export async function getKey(db: Db, keyId: string): Promise<KeyRow | null> {
  const { rows } = await db.query<KeyRow>(`SELECT ${COLUMNS} FROM api_keys WHERE id = $1`, [keyId]);
  return rows[0] ?? null;
}

export async function listKeys(db: Db, orgId: string): Promise<KeyRow[]> {
  const { rows } = await db.query<KeyRow>(`SELECT ${COLUMNS} FROM api_keys WHERE org_id = $1 ORDER BY created_at, id`, [orgId]);
  return rows;
}

export async function organizationExists(db: Db, orgId: string): Promise<boolean> {
  return (await db.query('SELECT 1 FROM organizations WHERE id = $1', [orgId])).rowCount === 1;
}

/** A scope may only name models and vendors the catalog has (a typo would otherwise make a key useless, silently). */
export async function unknownScopeRefs(db: Db, scope: KeyScope | null): Promise<FieldDetail[]> {
  const details: FieldDetail[] = [];
  const check = async (ids: string[] | undefined, sql: string, field: string, issue: string): Promise<void> => {
    if (ids === undefined) return;
    const known = new Set((await db.query<{ id: string }>(sql, [ids])).rows.map((r) => r.id));
    ids.forEach((id, i) => {
      if (!known.has(id)) details.push({ field: `${field}[${i}]`, issue });
    });
  };
  await check(scope?.model_ids, 'SELECT model_id::text AS id FROM models WHERE model_id = ANY($1::uuid[])', 'scope.model_ids', 'no catalog model has this model_id');
  await check(scope?.vendor_ids, 'SELECT id::text AS id FROM vendors WHERE id = ANY($1::uuid[])', 'scope.vendor_ids', 'no catalog vendor has this id');
  return details;
}

// ---- writes (inside the caller's transaction) ----

async function recordChange(client: PoolClient, keyId: string, change: 'created' | 'edited' | 'revoked'): Promise<void> {
  await client.query('SELECT pg_advisory_xact_lock($1)', [CHANGE_LOCK]);
  await client.query('INSERT INTO api_key_changes (key_id, change) VALUES ($1, $2)', [keyId, change]);
  // Pollers read within a second; a day of history is plenty, and the periodic full reload covers anything older.
  await client.query("DELETE FROM api_key_changes WHERE at < now() - interval '1 day'");
}

export interface Idempotency {
  key: string;
  requestHash: Buffer;
}

/** Inserts the key, or with an Idempotency-Key already used: the earlier key (replay) or a 409. */
export async function insertKey(
  client: PoolClient,
  id: string,
  orgId: string,
  input: KeyCreateInput,
  key: NewKey,
  idem: Idempotency | null,
): Promise<{ row: KeyRow; replay: boolean }> {
  const { rows } = await client.query<KeyRow>(
    `INSERT INTO api_keys (id, org_id, name, key_hash, prefix, last4, scope, binding, funding, expires_at, idempotency_key, request_hash, quota_per_minute)
     VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9, $10, $11, $12, $13)
     ON CONFLICT (org_id, idempotency_key) DO NOTHING
     RETURNING ${COLUMNS}`,
    [
      id, orgId, input.name, key.hash, key.prefix, key.last4, input.scope === null ? null : JSON.stringify(input.scope),
      input.binding, input.funding, input.expiresAt, idem?.key ?? null, idem?.requestHash ?? null, input.quotaPerMinute,
    ],
  );
  if (rows.length === 1) {
    await recordChange(client, id, 'created');
    return { row: rows[0], replay: false };
  }
  const earlier = await client.query<KeyRow & { request_hash: Buffer }>(
    `SELECT ${COLUMNS}, request_hash FROM api_keys WHERE org_id = $1 AND idempotency_key = $2`,
    [orgId, idem!.key],
  );
  const { request_hash: requestHash, ...row } = earlier.rows[0];
  if (!requestHash.equals(idem!.requestHash)) throw new GatewayError('idempotency_conflict');
  return { row, replay: true };
}

/** Applies an edit if `version` is current; 404, 409 version_conflict or 409 key_revoked otherwise. */
export async function updateKey(client: PoolClient, keyId: string, edit: KeyEditInput): Promise<KeyRow> {
  const sets: string[] = [];
  const values: unknown[] = [keyId, edit.version];
  const set = (column: string, value: unknown, cast = ''): void => {
    values.push(value);
    sets.push(`${column} = $${values.length}${cast}`);
  };
  if (edit.name !== undefined) set('name', edit.name);
  if (edit.scope !== undefined) set('scope', edit.scope === null ? null : JSON.stringify(edit.scope), '::jsonb');
  if (edit.funding !== undefined) set('funding', edit.funding);
  if (edit.expiresAt !== undefined) set('expires_at', edit.expiresAt);
  if (edit.quotaPerMinute !== undefined) set('quota_per_minute', edit.quotaPerMinute);
  const { rows } = await client.query<KeyRow>(
    `UPDATE api_keys SET ${sets.join(', ')}, version = version + 1
      WHERE id = $1 AND version = $2 AND revoked_at IS NULL RETURNING ${COLUMNS}`,
    values,
  );
  if (rows.length === 1) {
    await recordChange(client, keyId, 'edited');
    return rows[0];
  }
  const current = await getKey(client, keyId);
  if (current === null) throw new GatewayError('key_not_found');
  if (current.revoked_at !== null) throw new GatewayError('key_revoked');
  throw new GatewayError('version_conflict', { param: 'version' });
}

/** Revokes (bumping the version, so an edit prepared before it conflicts); revoking again changes nothing. */
export async function revokeKey(client: PoolClient, keyId: string): Promise<{ row: KeyRow; changed: boolean }> {
  const { rows } = await client.query<KeyRow>(
    `UPDATE api_keys SET revoked_at = now(), version = version + 1 WHERE id = $1 AND revoked_at IS NULL RETURNING ${COLUMNS}`,
    [keyId],
  );
  if (rows.length === 1) {
    await recordChange(client, keyId, 'revoked');
    return { row: rows[0], changed: true };
  }
  const current = await getKey(client, keyId);
  if (current === null) throw new GatewayError('key_not_found');
  return { row: current, changed: false };
}
