// Usage rows and organization lists as the console pages them: newest first,
// keyset-paged (a cursor is the last row's sort key, so a page never shifts
// when new rows arrive), with the filters the usage screen offers.
import type { Pool } from '../store/pool.js';

export interface UsageListRow {
  request_id: string;
  key_id: string;
  model_id: string;
  supplier: string | null;
  surface: string;
  funding: string;
  input_tokens: number;
  cached_input_tokens: number;
  output_tokens: number;
  image_units: number;
  reserved_micros: number;
  charged_micros: number;
  /** The part of charged_micros above what was held (migration 005). */
  overdraft_micros: number;
  outcome: string;
  metered_source: string | null;
  hold_expired: boolean;
  ttfb_ms: number | null;
  total_ms: number;
  finished_at: Date;
}

export interface UsageFilter {
  orgId: string;
  keyId: string | null;
  /** What a usage row's model_id may be for the model filter: the name asked for and the model_ids it names (modelFilter). */
  model: string[] | null;
  /** YYYY-MM-DD, UTC. */
  day: string | null;
}

/** The sort time as text with microseconds, so a cursor is exact (a JS Date keeps only milliseconds). */
const CURSOR_AT = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS cursor_at`;

function where(f: UsageFilter): { sql: string; values: unknown[] } {
  const values: unknown[] = [f.orgId];
  const parts = ['org_id = $1'];
  if (f.keyId !== null) parts.push(`key_id = $${values.push(f.keyId)}`);
  if (f.model !== null) parts.push(`model_id = ANY($${values.push(f.model)}::text[])`);
  if (f.day !== null) {
    parts.push(`finished_at >= $${values.push(f.day)}::date AT TIME ZONE 'UTC'`);
    parts.push(`finished_at < ($${values.push(f.day)}::date + 1) AT TIME ZONE 'UTC'`);
  }
  return { sql: parts.join(' AND '), values };
}

export interface UsagePage {
  rows: Array<UsageListRow & { cursor_at: string }>;
  hasMore: boolean;
  requests: number;
  /** Exact whatever the total (a sum over every row may pass 2^53). */
  chargedMicros: bigint;
}

/**
 * A person filters by the name they know (a canonical name or an alias) or by
 * model_id: the values a row's model_id may hold for that model. One query,
 * only when the filter is used.
 */
export async function modelFilter(pool: Pool, model: string): Promise<string[]> {
  const { rows } = await pool.query<{ id: string }>('SELECT model_id::text AS id FROM models WHERE canonical_name = $1 OR $1 = ANY(aliases)', [model]);
  return [model, ...rows.map((r) => r.id)];
}

/** The newest `limit` usage rows of an organization, and its totals over all of them. */
export function listUsage(pool: Pool, orgId: string, limit: number): Promise<UsagePage> {
  return usagePage(pool, { orgId, keyId: null, model: null, day: null }, limit, null);
}

export async function usagePage(pool: Pool, f: UsageFilter, limit: number, after: { at: string; id: string } | null): Promise<UsagePage> {
  const w = where(f);
  const values = [...w.values];
  let cond = w.sql;
  if (after !== null) cond += ` AND (finished_at, request_id) < ($${values.push(after.at)}::timestamptz, $${values.push(after.id)})`;
  const page = await pool.query<UsageListRow & { cursor_at: string }>(
    `SELECT request_id, key_id, model_id, supplier, surface, funding, input_tokens, cached_input_tokens, output_tokens, image_units,
            reserved_micros, charged_micros, overdraft_micros, outcome, metered_source, hold_expired, ttfb_ms, total_ms, finished_at,
            ${CURSOR_AT('finished_at')}
       FROM usage_records WHERE ${cond} ORDER BY finished_at DESC, request_id DESC LIMIT $${values.push(limit + 1)}`,
    values,
  );
  const totals = await pool.query<{ n: string; charged: string }>(
    `SELECT count(*)::text AS n, coalesce(sum(charged_micros), 0)::text AS charged FROM usage_records WHERE ${w.sql}`,
    w.values,
  );
  return {
    rows: page.rows.slice(0, limit),
    hasMore: page.rows.length > limit,
    requests: Number(totals.rows[0].n),
    chargedMicros: BigInt(totals.rows[0].charged),
  };
}

/** Spend per UTC day over the last `days` days (days with no traffic included as zero). */
export async function usageDaily(pool: Pool, f: UsageFilter, days: number): Promise<Array<{ day: string; requests: number; chargedMicros: bigint }>> {
  const w = where({ ...f, day: null });
  const values = [...w.values];
  const { rows } = await pool.query<{ day: string; n: string; charged: string }>(
    `WITH span AS (SELECT generate_series((now() AT TIME ZONE 'UTC')::date - ($${values.push(days - 1)}::int), (now() AT TIME ZONE 'UTC')::date, '1 day')::date AS day)
     SELECT to_char(span.day, 'YYYY-MM-DD') AS day, count(u.request_id)::text AS n, coalesce(sum(u.charged_micros), 0)::text AS charged
       FROM span LEFT JOIN usage_records u ON (u.finished_at AT TIME ZONE 'UTC')::date = span.day AND ${w.sql.replaceAll(/\b(org_id|key_id|model_id)\b/g, 'u.$1')}
      GROUP BY span.day ORDER BY span.day`,
    values,
  );
  return rows.map((r) => ({ day: r.day, requests: Number(r.n), chargedMicros: BigInt(r.charged) }));
}

export interface OrgListRow {
  id: string;
  name: string;
  created_at: Date;
  /** As the store has them: settlements reach it within billing.flush_ms. */
  balance_micros: number;
  package_micros: number;
  cursor_at: string;
}

/** Organizations by creation, optionally those whose name contains `search` (case-insensitive). */
export async function organizationsPage(pool: Pool, search: string | null, limit: number, after: { at: string; id: string } | null): Promise<{ rows: OrgListRow[]; hasMore: boolean }> {
  const values: unknown[] = [];
  const parts: string[] = [];
  if (search !== null && search !== '') parts.push(`strpos(lower(name), lower($${values.push(search)})) > 0`);
  if (after !== null) parts.push(`(created_at, id) > ($${values.push(after.at)}::timestamptz, $${values.push(after.id)}::uuid)`);
  const { rows } = await pool.query<OrgListRow>(
    `SELECT id, name, created_at, m.balance_micros, m.package_micros, ${CURSOR_AT('created_at')}
       FROM organizations JOIN organization_money m USING (id) ${parts.length > 0 ? 'WHERE ' + parts.join(' AND ') : ''}
      ORDER BY created_at, id LIMIT $${values.push(limit + 1)}`,
    values,
  );
  return { rows: rows.slice(0, limit), hasMore: rows.length > limit };
}
