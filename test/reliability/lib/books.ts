// The invariants on money and holds, checked against the store itself and
// against the running ledger (through the console), after every scenario of
// the reliability suite and at the end of the soak. Nothing here imports tap:
// the soak (bench/soak.ts) uses the same checks.
import pg from 'pg';
import { micros } from '../../helpers/money.js';
import { console_ } from '../../helpers/provision.js';

export interface BooksCheck {
  orgs: number;
  usageRows: number;
  /** Sum of every usage row's charge, in micros. */
  chargedMicros: number;
  /** Empty when every invariant holds; otherwise one line per broken one. */
  violations: string[];
}

const n = (v: unknown): number => {
  const x = Number(v);
  if (!Number.isSafeInteger(x)) throw new Error(`not an exact amount: ${String(v)}`);
  return x;
};

/**
 * For every organization in the store: the balance (and package) equal the sum
 * of its journal; the journal's charges equal its usage rows' charges, one
 * charge entry per charged row (nothing charged twice, nothing charged without
 * a row); balance = credits − settled usage; and no balance below zero beyond
 * the documented overdraft (docs/billing.md: charges above their hold, and
 * settlements whose hold had expired).
 */
export async function checkBooks(databaseUrl: string): Promise<BooksCheck> {
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    const { rows } = await c.query(`
      SELECT o.id, o.balance_micros::text AS balance, o.package_micros::text AS package,
        coalesce(j.balance, 0)::text AS j_balance, coalesce(j.package, 0)::text AS j_package,
        coalesce(j.credits, 0)::text AS credits, coalesce(j.charges, 0)::text AS j_charges, coalesce(j.charge_entries, 0)::text AS charge_entries,
        coalesce(u.charged, 0)::text AS u_charged, coalesce(u.charged_balance, 0)::text AS u_charged_balance,
        coalesce(u.charged_rows, 0)::text AS charged_rows, coalesce(u.rows, 0)::text AS u_rows, coalesce(u.overdraft, 0)::text AS overdraft
      FROM organization_money o
      LEFT JOIN (SELECT org_id,
          sum(amount_micros) FILTER (WHERE funding = 'balance') AS balance,
          sum(amount_micros) FILTER (WHERE funding = 'package') AS package,
          sum(amount_micros) FILTER (WHERE funding = 'balance' AND kind IN ('opening', 'credit')) AS credits,
          sum(amount_micros) FILTER (WHERE kind = 'charge') AS charges,
          count(*) FILTER (WHERE kind = 'charge' AND amount_micros <> 0) AS charge_entries
        FROM ledger_entries GROUP BY org_id) j ON j.org_id = o.id
      LEFT JOIN (SELECT org_id, count(*) AS rows,
          sum(charged_micros) AS charged,
          sum(charged_micros) FILTER (WHERE funding = 'balance') AS charged_balance,
          count(*) FILTER (WHERE charged_micros > 0) AS charged_rows,
          sum(overdraft_micros) + coalesce(sum(charged_micros) FILTER (WHERE hold_expired), 0) AS overdraft
        FROM usage_records GROUP BY org_id) u ON u.org_id = o.id`);
    const violations: string[] = [];
    let usageRows = 0;
    let chargedMicros = 0;
    for (const r of rows) {
      const id = String(r.id).slice(0, 8);
      const balance = n(r.balance);
      usageRows += n(r.u_rows);
      chargedMicros += n(r.u_charged);
      if (balance !== n(r.j_balance)) violations.push(`org ${id}: balance ${balance} ≠ its journal ${r.j_balance}`);
      if (n(r.package) !== n(r.j_package)) violations.push(`org ${id}: package ${r.package} ≠ its journal ${r.j_package}`);
      if (-n(r.j_charges) !== n(r.u_charged)) violations.push(`org ${id}: journal charges ${-n(r.j_charges)} ≠ usage rows ${r.u_charged}`);
      if (n(r.charge_entries) !== n(r.charged_rows)) violations.push(`org ${id}: ${r.charge_entries} charge entries for ${r.charged_rows} charged usage rows`);
      if (balance !== n(r.credits) - n(r.u_charged_balance)) violations.push(`org ${id}: balance ${balance} ≠ credits ${r.credits} − usage ${r.u_charged_balance}`);
      if (balance < -n(r.overdraft)) violations.push(`org ${id}: balance ${balance} below zero beyond its recorded overdraft ${r.overdraft}`);
    }
    return { orgs: rows.length, usageRows, chargedMicros, violations };
  } finally {
    await c.end();
  }
}

export interface HoldsCheck {
  /** Open holds left, summed over the organizations, once the wait is over. */
  leaked: number;
  /** The running ledger's balance differs from the store's. */
  violations: string[];
}

/**
 * Waits (up to `timeoutMs`: a hold lease and a sweep, when a holder died) until
 * no organization in the store has an open hold in the running ledger, then
 * compares each organization's live balance with the store's.
 */
export async function checkHolds(gatewayUrl: string, databaseUrl: string, timeoutMs = 5000): Promise<HoldsCheck> {
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  let ids: string[];
  try {
    ids = (await c.query('SELECT id FROM organizations')).rows.map((r) => String(r.id));
  } finally {
    await c.end();
  }
  const until = Date.now() + timeoutMs;
  const readLive = (): Promise<Array<{ id: string; balance: number; openHolds: number }>> =>
    Promise.all(
      ids.map(async (id) => {
        const org = await console_(gatewayUrl, 'GET', `/organizations/${id}`);
        return { id, balance: micros(org.balance), openHolds: Number(org.open_holds) };
      }),
    );
  let live = await readLive();
  while (!live.every((o) => o.openHolds === 0) && Date.now() <= until) {
    await new Promise((r) => setTimeout(r, 200));
    live = await readLive();
  }
  const leaked = live.reduce((s, o) => s + o.openHolds, 0);
  // Settlements reach the store within billing.flush_ms; the check runs once holds are gone, after one more flush.
  // After a stall (Redis paused, the store reset) on a loaded machine a batch's write can take longer: both sides
  // are read again until they agree, for at most AGREE_MS, and a difference that outlasts it is a violation.
  await new Promise((r) => setTimeout(r, 300));
  const agreeBy = Date.now() + AGREE_MS;
  const c2 = new pg.Client({ connectionString: databaseUrl });
  await c2.connect();
  let violations: string[] = [];
  try {
    for (;;) {
      const { rows } = await c2.query('SELECT id, balance_micros::text AS b FROM organization_money');
      const store = new Map(rows.map((r) => [String(r.id), n(r.b)]));
      violations = [];
      for (const o of live) if (store.get(o.id) !== o.balance) violations.push(`org ${o.id.slice(0, 8)}: the running ledger says ${o.balance}, the store ${store.get(o.id)}`);
      if (violations.length === 0 || Date.now() > agreeBy) break;
      await new Promise((r) => setTimeout(r, 200));
      live = await readLive();
    }
  } finally {
    await c2.end();
  }
  return { leaked, violations };
}

/** How long the running ledger and the store may take to agree once the holds are gone (one flush, plus a stalled batch's retry). */
const AGREE_MS = 3000;

/** Which of these request ids have no usage row in the store. */
export async function missingRows(databaseUrl: string, requestIds: string[]): Promise<string[]> {
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    const { rows } = await c.query('SELECT request_id FROM usage_records WHERE request_id = ANY($1)', [requestIds]);
    const found = new Set(rows.map((r) => String(r.request_id)));
    return requestIds.filter((id) => !found.has(id));
  } finally {
    await c.end();
  }
}
