// Organizations and their usage as the operator reads and writes them, with
// money kept consistent with the journal: an opening balance is a journal
// entry, written in the same statement as the organization row.
import { randomUUID } from 'node:crypto';
import type { Funding } from '../auth/types.js';
import type { QuotaInput } from '../billing/credit-input.js';
import type { Pool, PoolClient } from '../store/pool.js';
import { OrgActor } from './actor.js';
import type { CreditCommand } from './protocol.js';
import { isCheckViolation, PgLedgerStore } from './store.js';

type Db = Pool | PoolClient;

export interface OrganizationRow {
  id: string;
  name: string;
  created_at: Date;
  balance_micros: number;
  package_micros: number;
  package_expires_at: Date | null;
}

const COLUMNS = 'id, name, created_at, balance_micros, package_micros, package_expires_at';

/** The organization and, when it starts with money, the `opening` journal entry that explains it. */
export async function createOrganization(db: Db, id: string, name: string, balanceMicros: number): Promise<OrganizationRow> {
  const { rows } = await db.query<OrganizationRow>(
    `WITH o AS (
       INSERT INTO organizations (id, name, balance_micros) VALUES ($1, $2, $3) RETURNING ${COLUMNS}
     ), e AS (
       INSERT INTO ledger_entries (id, org_id, kind, funding, amount_micros)
       SELECT 'opening:' || o.id, o.id, 'opening', 'balance', o.balance_micros FROM o WHERE o.balance_micros > 0
     )
     SELECT * FROM o`,
    [id, name, balanceMicros],
  );
  return rows[0];
}

export async function readOrganization(db: Db, id: string): Promise<OrganizationRow | null> {
  const { rows } = await db.query<OrganizationRow>(`SELECT ${COLUMNS} FROM organizations WHERE id = $1`, [id]);
  return rows[0] ?? null;
}

/** Name and quotas only: money moves through the ledger, never by an edit. */
export async function updateOrganization(db: Db, id: string, input: QuotaInput): Promise<OrganizationRow | null> {
  const sets: string[] = [];
  const values: unknown[] = [id];
  const set = (column: string, value: unknown): void => {
    values.push(value);
    sets.push(`${column} = $${values.length}`);
  };
  if (input.name !== undefined) set('name', input.name);
  if (input.quotaPerSecond !== undefined) set('quota_per_second', input.quotaPerSecond);
  if (input.quotaPerMinute !== undefined) set('quota_per_minute', input.quotaPerMinute);
  const { rows } = await db.query<OrganizationRow>(`UPDATE organizations SET ${sets.join(', ')} WHERE id = $1 RETURNING ${COLUMNS}`, values);
  return rows[0] ?? null;
}

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

export interface UsagePage {
  rows: UsageListRow[];
  requests: number;
  /** Exact whatever the total (a sum over every row may pass 2^53). */
  chargedMicros: bigint;
}

/** The newest `limit` usage rows of an organization, and its totals over all of them. */
export async function listUsage(db: Db, orgId: string, limit: number): Promise<UsagePage> {
  const page = await db.query<UsageListRow>(
    `SELECT request_id, key_id, model_id, supplier, surface, funding, input_tokens, cached_input_tokens, output_tokens, image_units,
            reserved_micros, charged_micros, overdraft_micros, outcome, metered_source, hold_expired, ttfb_ms, total_ms, finished_at
     FROM usage_records WHERE org_id = $1 ORDER BY finished_at DESC, request_id DESC LIMIT $2`,
    [orgId, limit],
  );
  const totals = await db.query<{ n: number; charged: string }>(
    'SELECT count(*)::bigint AS n, coalesce(sum(charged_micros), 0)::text AS charged FROM usage_records WHERE org_id = $1',
    [orgId],
  );
  return { rows: page.rows, requests: Number(totals.rows[0].n), chargedMicros: BigInt(totals.rows[0].charged) };
}

export type StoreCreditResult =
  | { ok: true; entryId: string; replayed: false }
  | { ok: true; entryId: string; replayed: true; amount: number; target: Funding }
  | { ok: false; code: 'unknown_organization' | 'money_limit' };

/**
 * A credit written straight to the store, for processes that cannot reach the
 * ledger host (the `tollgate` command): the same entries and the same
 * statement as the actor's credit. A running host's actor takes it in at its
 * next reconcile (within a second).
 */
export async function creditInStore(pool: Pool, cmd: CreditCommand, now = Date.now()): Promise<StoreCreditResult> {
  const store = new PgLedgerStore(pool);
  const row = await store.loadAccount(cmd.orgId);
  if (row === null) return { ok: false, code: 'unknown_organization' };
  // Only the actor's credit rules are used (forfeiting an expired package); quotas do not matter here.
  const rules = new OrgActor(cmd.orgId, row, { perSecond: 1, perMinute: 1 });
  const entryId = `credit:${cmd.orgId}:${cmd.key ?? randomUUID()}`;
  const entries = rules.creditEntries(entryId, cmd.amount, cmd.target, cmd.expiresAt, cmd.note, now);
  if (rules.exceedsLimit(entries)) return { ok: false, code: 'money_limit' };
  let prior;
  try {
    prior = await store.writeCredit(entries);
  } catch (err) {
    if (isCheckViolation(err)) return { ok: false, code: 'money_limit' };
    throw err;
  }
  if (prior === null) return { ok: true, entryId, replayed: false };
  return { ok: true, entryId, replayed: true, amount: prior.amount, target: prior.funding };
}
