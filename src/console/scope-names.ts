// People name models and vendors by name: a key scope's `model_ids` may hold a
// model's canonical name or alias, and `vendor_ids` a vendor's code, as well
// as the catalog UUIDs. Names are turned into UUIDs here, before the scope is
// validated, so the key stores (and every worker checks) UUIDs only.
import type { FieldDetail } from '../errors/gateway-error.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { Pool } from '../store/pool.js';
import { isUuid } from '../store/uuid.js';

/** Past this many entries the scope is left for the validator to refuse: no query for an unbounded list. */
const MAX_NAMES = 256;

type Body = Record<string, unknown>;

async function resolveAxis(
  pool: Pool,
  values: unknown,
  field: string,
  sql: string,
  what: string,
  details: FieldDetail[],
): Promise<unknown> {
  if (!Array.isArray(values) || values.length > MAX_NAMES) return values;
  const names = values.filter((v): v is string => typeof v === 'string' && !isUuid(v) && v.length <= 200);
  if (names.length === 0) return values;
  const found = new Map((await pool.query<{ name: string; id: string }>(sql, [names])).rows.map((r) => [r.name, r.id]));
  return values.map((v, i) => {
    if (typeof v !== 'string' || isUuid(v) || !names.includes(v)) return v;
    const id = found.get(v);
    // The entry is named by its index, not its text: a refusal never echoes a string the caller sent (it may be a pasted key).
    if (id === undefined) details.push({ field: `${field}[${i}]`, issue: `is not ${what}` });
    return id ?? v;
  });
}

/**
 * The request body with the scope's names replaced by UUIDs; refuses (400,
 * naming each entry) a name the catalog does not have. A body without a scope
 * of lists comes back as it is.
 */
export async function resolveScopeNames(pool: Pool, body: unknown): Promise<unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return body;
  const scope = (body as Body).scope;
  if (scope === null || typeof scope !== 'object' || Array.isArray(scope)) return body;
  const s = scope as Body;
  const details: FieldDetail[] = [];
  const resolved: Body = { ...s };
  if (Object.hasOwn(s, 'model_ids')) {
    resolved.model_ids = await resolveAxis(
      pool,
      s.model_ids,
      'scope.model_ids',
      // A canonical name wins over another model's alias of the same spelling, as in the catalog snapshot.
      `SELECT DISTINCT ON (n.name) n.name, m.model_id::text AS id
         FROM models m, unnest(array_prepend(m.canonical_name, m.aliases)) AS n(name)
        WHERE n.name = ANY($1::text[]) ORDER BY n.name, n.name = m.canonical_name DESC`,
      'a catalog model name, alias or model_id',
      details,
    );
  }
  if (Object.hasOwn(s, 'vendor_ids')) {
    resolved.vendor_ids = await resolveAxis(pool, s.vendor_ids, 'scope.vendor_ids', 'SELECT code AS name, id::text AS id FROM vendors WHERE code = ANY($1::text[])', 'a catalog vendor code or id', details);
  }
  if (details.length > 0) throw new GatewayError('invalid_request', { param: details[0].field, fieldDetails: details });
  return { ...(body as Body), scope: resolved };
}
