// An organization's row as the operator reads and writes it, with money kept
// consistent with the journal: an opening balance is a journal entry, written
// in the same statement as the organization row. Money moves afterwards only
// through the ledger (its actors, or ledger/store-credit.ts offline).
import type { Pool, PoolClient } from '../store/pool.js';
import type { OrganizationEdit } from './input.js';

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
// Money as organization_money has it: the row plus the workers' parts (migration 008).
const READ = `SELECT o.id, o.name, o.created_at, m.balance_micros, m.package_micros, o.package_expires_at
  FROM organizations o JOIN organization_money m ON m.id = o.id`;

/** The organization and, when it starts with money, the `opening` journal entry that explains it. */
export async function createOrganization(db: Db, id: string, name: string, balanceMicros: number): Promise<OrganizationRow> {
  const { rows } = await db.query<OrganizationRow>(
    `WITH o AS (
       INSERT INTO organizations (id, name, balance_micros) VALUES ($1, $2, $3) RETURNING ${COLUMNS}
     ), e AS (
       INSERT INTO ledger_postings (id, org_id, kind, funding, amount_micros)
       SELECT 'opening:' || o.id, o.id, 'opening', 'balance', o.balance_micros FROM o WHERE o.balance_micros > 0
     )
     SELECT * FROM o`,
    [id, name, balanceMicros],
  );
  return rows[0];
}

export async function readOrganization(db: Db, id: string): Promise<OrganizationRow | null> {
  const { rows } = await db.query<OrganizationRow>(`${READ} WHERE o.id = $1`, [id]);
  return rows[0] ?? null;
}

/** Name and quotas only: money moves through the ledger, never by an edit. */
export async function updateOrganization(db: Db, id: string, input: OrganizationEdit): Promise<OrganizationRow | null> {
  const sets: string[] = [];
  const values: unknown[] = [id];
  const set = (column: string, value: unknown): void => {
    values.push(value);
    sets.push(`${column} = $${values.length}`);
  };
  if (input.name !== undefined) set('name', input.name);
  if (input.quotaPerSecond !== undefined) set('quota_per_second', input.quotaPerSecond);
  if (input.quotaPerMinute !== undefined) set('quota_per_minute', input.quotaPerMinute);
  const { rows } = await db.query<OrganizationRow>(
    // The edited columns from RETURNING (the statement's other parts see the row as it was); the money is not edited.
    `WITH u AS (UPDATE organizations SET ${sets.join(', ')} WHERE id = $1 RETURNING id, name, created_at, package_expires_at)
     SELECT u.id, u.name, u.created_at, m.balance_micros, m.package_micros, u.package_expires_at FROM u JOIN organization_money m ON m.id = u.id`,
    values,
  );
  return rows[0] ?? null;
}
