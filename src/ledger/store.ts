// What the ledger reads from and writes to PostgreSQL. A batch of usage rows
// and journal entries is written in one transaction per flush: by COPY when
// it is the batch's first attempt (the common case, and the cheapest for the
// server), else (a retry, or a first attempt that met a row already stored)
// by one statement that skips what is already there and recognises its own
// earlier attempt.
import type { Funding } from '../money/money.js';
import pg from 'pg'; // escapeLiteral: a batch's writer in its balances' statement
import { copyInOnce, type Pool } from '../store/pool.js';
import type { UsageRow } from './protocol.js';
import type { AccountRow, Entry } from './records.js';
import { USAGE_COLUMNS, usageLine } from './usage-line.js';
import { isUuid } from '../store/uuid.js';

export interface StoredCredit {
  amount: number;
  funding: Funding;
}

/** PostgreSQL's check_violation: a CHECK constraint refused the row (money past its maximum, migration 005). */
export function isCheckViolation(err: unknown): boolean {
  return (err as { code?: unknown })?.code === '23514';
}

/**
 * A settlement as the store writes it: its usage row and, when `writer` is
 * set, its charge (records.ts chargeEntry: the row carries it, migration 010),
 * tagged with the writer so that a retry can recognise its own earlier write.
 */
export interface SettledRow {
  readonly usage: UsageRow;
  readonly writer: string | null;
}

export interface LedgerStore {
  loadAccount(orgId: string): Promise<AccountRow | null>;
  /**
   * The rows of many organizations at once (absent ids are left out). Each
   * row's `journaled` lists which of `entryIds` (its organization's) the
   * journal holds, read in the same snapshot as the balance: whether the
   * balance already counts them.
   */
  loadAccounts(orgIds: string[], entryIds?: string[]): Promise<Map<string, AccountRow>>;
  /**
   * Usage rows, and the charge entry of each that has a writer tag, in one
   * transaction. Answers the ids of the entries that are now stored by this
   * write: inserted now, or by an earlier attempt carrying the same writer
   * tag (its answer was lost). An entry already stored by anyone else (a
   * repeated settlement) is not in the set. `firstAttempt`: no row of this
   * batch was sent before, so there is no earlier attempt to look for.
   */
  writeBatch(rows: readonly SettledRow[], firstAttempt?: boolean): Promise<Set<string>>;
  /** A credit (its last entry) with any forfeit before it; null when written, or what the earlier credit of the same id was. */
  writeCredit(entries: Entry[]): Promise<StoredCredit | null>;
  /** A worker's batch (worker-books.ts), added to its own parts of the balances; idempotent. */
  writeWriterBatch(rows: readonly SettledRow[], writer: string, seq: number, firstAttempt: boolean): Promise<void>;
  /**
   * A worker's batch on its first attempt, as the COPY text its rows were
   * made into (usage-line.ts), with what their charges move per organization
   * ([balance, package], every organization of the batch). False: a row was
   * already stored, and nothing of this write was kept (writeWriterBatch then).
   */
  copyWriterLines(lines: Buffer, moved: ReadonlyMap<string, readonly [bigint, bigint]>, writer: string, seq: number): Promise<boolean>;
  /** A gone writer's parts join the organizations' rows; resolves with those organizations' ids. */
  foldWriter(writer: string): Promise<string[]>;
  /** Batches written since start, by path: COPY (first attempts), or the statement (retries, and first attempts that met a stored row). */
  readonly writePaths?: { copy: number; statement: number };
}



// Adds the inserted entries to the organizations' running sums in the same
// statement, so a balance can never disagree with its journal. (One UPDATE
// only: two data-modifying CTEs touching the same row would lose one.)
const applyEntries = (extraSet: string): string => `
d AS (
  SELECT org_id,
         coalesce(sum(amount_micros) FILTER (WHERE funding = 'balance'), 0)::bigint AS b,
         coalesce(sum(amount_micros) FILTER (WHERE funding = 'package'), 0)::bigint AS p
  FROM e GROUP BY org_id
), o AS (
  UPDATE organizations SET balance_micros = balance_micros + d.b, package_micros = package_micros + d.p${extraSet}
  FROM d WHERE organizations.id = d.org_id
)`;

// A credit's entries (any forfeit, then the credit) as one JSON parameter (json_to_recordset): the
// primary builds one string natively instead of a text array literal per column. No writer tag: a
// credit is recognised on replay by its own id (writeCredit). Entries written apart from a usage row
// are rows of ledger_postings (migration 010).
const INSERT_ENTRIES = `
  INSERT INTO ledger_postings (id, org_id, kind, funding, amount_micros, request_id, expires_at, note, writer)
  SELECT id, "orgId", kind, funding, amount, "requestId", "expiresAt", note, writer
  FROM json_to_recordset($1::json) AS t(id text, "orgId" uuid, kind text, funding text, amount bigint, "requestId" text, "expiresAt" timestamptz,
    note text, writer text)
  ON CONFLICT (id) DO NOTHING
  RETURNING id, org_id, funding, amount_micros`;

// One JSON document per flush, parsed once (MATERIALIZED): the usage rows,
// each that carries a writer tag with its charge on it (charge_writer,
// migration 010: the journal's charge entry is the row's, records.ts
// chargeEntry). e: the charges this statement inserted, as entries.
const BATCH_ROWS = `r AS MATERIALIZED (
  SELECT * FROM json_to_recordset($1::json) AS t("requestId" text, "orgId" uuid, "keyId" text, "modelId" text, supplier text,
    surface text, funding text, "inputTokens" bigint, "cachedInputTokens" bigint, "outputTokens" bigint, "imageUnits" bigint,
    "reservedMicros" bigint, "chargedMicros" bigint, outcome text, "meteredSource" text, "holdExpired" bool, "ttfbMs" int,
    "totalMs" int, "finishedAt" float8, "overdraftMicros" bigint, writer text)
), u AS (
  INSERT INTO usage_records (request_id, org_id, key_id, model_id, supplier, surface, funding, input_tokens, cached_input_tokens,
    output_tokens, image_units, reserved_micros, charged_micros, outcome, metered_source, hold_expired, ttfb_ms, total_ms, finished_at,
    overdraft_micros, charge_writer)
  SELECT "requestId", "orgId", "keyId", "modelId", supplier, surface, funding, "inputTokens", "cachedInputTokens", "outputTokens",
    "imageUnits", "reservedMicros", "chargedMicros", outcome, "meteredSource", "holdExpired", "ttfbMs", "totalMs",
    to_timestamp("finishedAt" / 1000.0), "overdraftMicros", writer
  FROM r
  ON CONFLICT (request_id) DO NOTHING
  RETURNING request_id, org_id, funding, charged_micros, charge_writer
), e AS (
  SELECT 'charge:' || request_id AS id, org_id, funding, -charged_micros AS amount_micros FROM u WHERE charge_writer IS NOT NULL
)`;
const WRITE_BATCH = `
WITH ${BATCH_ROWS}, ${applyEntries('')}
SELECT id FROM e
UNION ALL
-- Other sub-statements do not see the rows u inserts: these are earlier attempts of this very write, found by
-- the request id's primary key. $2 false (a first attempt: there is none) skips the join.
SELECT 'charge:' || x.request_id FROM usage_records x JOIN r ON x.request_id = r."requestId" AND x.charge_writer = r.writer
WHERE $2::bool`;

// The COPY path (writeBatch): the same rows as WRITE_BATCH, taken by COPY, then the balances'
// statement, in one query (copyInOnce: two exchanges, one transaction). COPY has no ON CONFLICT:
// a row already stored fails it whole (unique_violation), and the batch goes by WRITE_BATCH instead.
const COPY_BATCH = `COPY usage_records (${USAGE_COLUMNS}) FROM STDIN`;
const UNIQUE_VIOLATION = '23505';
/** A batch's sums join its writer's part of a balance, and the part takes the batch's seq. */
const ADD_TO_PART = `ON CONFLICT (org_id, writer) DO UPDATE SET
  balance_micros = organization_balance_parts.balance_micros + excluded.balance_micros,
  package_micros = organization_balance_parts.package_micros + excluded.package_micros,
  seq = greatest(organization_balance_parts.seq, excluded.seq)`;

/**
 * The balances' statement of a COPY batch: the organizations' rows, or (a
 * worker's batch, writeWriterBatch) the writer's own parts of them (migration
 * 008), each part it touches stamped with the batch's seq, whether this
 * attempt inserted anything or an earlier one did: the actor reads seq to
 * know the batch is counted.
 *
 * A query that holds a COPY goes by the simple protocol, which takes no
 * parameters, so the values are written into the text, and only values this
 * process made and checks: organization ids are uuids (else it throws before
 * anything is sent; the caller's retry goes by the statement, which the
 * server judges), sums are BigInts' digits, the writer a quoted literal.
 */
function movesStatement(moved: ReadonlyMap<string, readonly [bigint, bigint]>, parts: { writer: string; seq: number } | null): string {
  const ids = [...moved.keys()];
  for (const id of ids) if (!isUuid(id)) throw new Error(`ledger: a batch's organization id is not a uuid: ${JSON.stringify(id)}`);
  const sums = (k: 0 | 1): string => ids.map((id) => moved.get(id)![k].toString()).join(',');
  const v = `unnest('{${ids.join(',')}}'::uuid[], '{${sums(0)}}'::bigint[], '{${sums(1)}}'::bigint[]) AS v(id, b, p)`;
  if (parts === null) {
    return `UPDATE organizations SET balance_micros = balance_micros + v.b, package_micros = package_micros + v.p FROM ${v} WHERE organizations.id = v.id`;
  }
  if (!Number.isSafeInteger(parts.seq)) throw new Error(`ledger: a batch's seq is not an integer: ${parts.seq}`);
  return `
INSERT INTO organization_balance_parts (org_id, writer, balance_micros, package_micros, seq)
SELECT v.id, ${pg.escapeLiteral(parts.writer)}, v.b, v.p, ${parts.seq} FROM ${v}
${ADD_TO_PART}`;
}

// A worker's batch by the statement (a retry, or a first attempt that met a row already stored): the sums from the rows it inserts.
const WRITE_WRITER_BATCH = `
WITH ${BATCH_ROWS}, d AS (
  SELECT o.org_id,
         coalesce(sum(e.amount_micros) FILTER (WHERE e.funding = 'balance'), 0)::bigint AS b,
         coalesce(sum(e.amount_micros) FILTER (WHERE e.funding = 'package'), 0)::bigint AS p
  FROM (SELECT DISTINCT "orgId" AS org_id FROM r) o LEFT JOIN e ON e.org_id = o.org_id GROUP BY o.org_id
)
INSERT INTO organization_balance_parts (org_id, writer, balance_micros, package_micros, seq)
SELECT d.org_id, $2, d.b, d.p, $3 FROM d
${ADD_TO_PART}`;
// A writer that is gone and whose batches are all written: its parts join the organizations' rows.
const FOLD_WRITER = `
WITH p AS (DELETE FROM organization_balance_parts WHERE writer = $1 RETURNING org_id, balance_micros, package_micros)
UPDATE organizations o SET balance_micros = o.balance_micros + p.balance_micros, package_micros = o.package_micros + p.package_micros
FROM p WHERE o.id = p.org_id
RETURNING o.id`;

// A package credit may set the expiry; it moves only if the credit was inserted.
const WRITE_CREDIT = `
WITH e AS (${INSERT_ENTRIES}
), ${applyEntries(', package_expires_at = coalesce($2::timestamptz, package_expires_at)')}
SELECT id FROM e`;

/** A row of WRITE_BATCH's document: the usage row, with its writer tag when it carries a charge. */
function batchRow(r: SettledRow): UsageRow | (UsageRow & { writer: string }) {
  return r.writer === null ? r.usage : { ...r.usage, writer: r.writer };
}

const wellFormed = (_key: string, v: unknown): unknown => (typeof v === 'string' ? (v as string & { toWellFormed(): string }).toWellFormed() : v);

/**
 * JSON text for a json parameter. JSON.stringify writes a lone surrogate (a
 * credit's note, any text a caller sent can hold one) as a \udXXX escape,
 * which PostgreSQL's json parser refuses: one such string would fail the
 * whole statement, a flush of everyone's charges included. Each becomes
 * U+FFFD, as pg's text parameters write it; the check is one scan, the
 * rewrite only when an escape is there.
 */
export function pgJson(value: unknown): string {
  const text = JSON.stringify(value);
  return text.includes('\\ud') || text.includes('\\uD') ? JSON.stringify(value, wellFormed) : text;
}

const EMPTY_SEQS: ReadonlyMap<string, number> = new Map();
/** A charge entry's id is its request id's (records.ts chargeEntry). */
const CHARGE = 'charge:';

export class PgLedgerStore implements LedgerStore {
  constructor(private readonly pool: Pool) {}

  async loadAccount(orgId: string): Promise<AccountRow | null> {
    if (!isUuid(orgId)) return null;
    return (await this.loadAccounts([orgId])).get(orgId) ?? null;
  }

  async loadAccounts(orgIds: string[], entryIds: string[] = []): Promise<Map<string, AccountRow>> {
    // One statement, so one snapshot: the balance and the entries it counts. A charge is found by its usage
    // row's primary key (migration 010), every other entry by its own.
    const charges: string[] = [];
    const others: string[] = [];
    for (const id of entryIds) if (id.startsWith(CHARGE)) charges.push(id.slice(CHARGE.length));
    else others.push(id);
    const { rows } = await this.pool.query(
      `SELECT o.id, o.balance_micros, o.package_micros, o.package_expires_at, o.quota_per_second, o.quota_per_minute,
              array_cat((SELECT array_agg(e.id) FROM ledger_postings e WHERE e.id = ANY($2::text[]) AND e.org_id = o.id),
                        (SELECT array_agg('charge:' || u.request_id) FROM usage_records u
                          WHERE u.request_id = ANY($3::text[]) AND u.org_id = o.id AND u.charge_writer IS NOT NULL)) AS journaled,
              (SELECT json_build_object('b', sum(p.balance_micros)::text, 'p', sum(p.package_micros)::text, 'seqs', json_object_agg(p.writer, p.seq))
                 FROM organization_balance_parts p WHERE p.org_id = o.id) AS parts
       FROM organizations o WHERE o.id = ANY($1::uuid[])`,
      [orgIds, others, charges],
    );
    const out = new Map<string, AccountRow>();
    for (const r of rows) {
      // No part: the aggregate's one row has nulls.
      const parts = r.parts?.seqs == null ? null : (r.parts as { b: string; p: string; seqs: Record<string, number> });
      out.set(r.id, {
        balance: Number(r.balance_micros) + (parts === null ? 0 : Number(parts.b)),
        package: Number(r.package_micros) + (parts === null ? 0 : Number(parts.p)),
        writerSeqs: parts === null ? EMPTY_SEQS : new Map(Object.entries(parts.seqs).map(([w, seq]) => [w, Number(seq)])),
        packageExpiresAt: r.package_expires_at === null ? null : new Date(r.package_expires_at).getTime(),
        quotaPerSecond: r.quota_per_second,
        quotaPerMinute: r.quota_per_minute,
        journaled: new Set<string>(r.journaled ?? []),
      });
    }
    return out;
  }

  readonly writePaths = { copy: 0, statement: 0 };

  async writeBatch(rows: readonly SettledRow[], firstAttempt = false): Promise<Set<string>> {
    if (firstAttempt && rows.length > 0) {
      try {
        const stored = await this.copyBatch(rows);
        this.writePaths.copy++;
        return stored;
      } catch (err) {
        // Another writer's row or entry (a repeated settlement, a direct write): nothing of the COPY was kept.
        if ((err as { code?: unknown }).code !== UNIQUE_VIOLATION) throw err;
      }
    }
    // Named: each connection parses and plans this large statement once, not on every flush.
    const values = [pgJson(rows.map(batchRow)), !firstAttempt];
    const { rows: stored } = await this.pool.query<{ id: string }>({ name: 'ledger_write_batch', text: WRITE_BATCH, values });
    this.writePaths.statement++;
    return new Set(stored.map((r) => r.id));
  }

  /** A first attempt: every row and entry is new, so all of its entries are stored by it, or none (it throws). */
  private async copyBatch(rows: readonly SettledRow[], parts: { writer: string; seq: number } | null = null): Promise<Set<string>> {
    let usage = '';
    const stored = new Set<string>();
    // Per organization, exact: [balance, package] moved by this batch's charges.
    const moved = new Map<string, [bigint, bigint]>();
    for (const { usage: u, writer } of rows) {
      usage += usageLine(u, writer);
      if (parts !== null && !moved.has(u.orgId)) moved.set(u.orgId, [0n, 0n]); // every part the batch touches gets its seq
      if (writer === null) continue;
      stored.add(CHARGE + u.requestId);
      let sums = moved.get(u.orgId);
      if (sums === undefined) moved.set(u.orgId, (sums = [0n, 0n]));
      // Not a whole number: COPY has already refused the row's charged_micros, and the transaction with it.
      if (Number.isSafeInteger(u.chargedMicros)) sums[u.funding === 'package' ? 1 : 0] -= BigInt(u.chargedMicros);
    }
    await this.copyAndMove(Buffer.from(usage, 'utf8'), moved, parts);
    return stored;
  }

  /** COPY `lines` into usage_records and move the balances (the organizations' rows, or the writer's parts) by `moved`, in one query. */
  private copyAndMove(lines: Buffer, moved: ReadonlyMap<string, readonly [bigint, bigint]>, parts: { writer: string; seq: number } | null): Promise<void> {
    return copyInOnce(this.pool, moved.size === 0 ? COPY_BATCH : `${COPY_BATCH};\n${movesStatement(moved, parts)}`, [lines]);
  }

  async copyWriterLines(lines: Buffer, moved: ReadonlyMap<string, readonly [bigint, bigint]>, writer: string, seq: number): Promise<boolean> {
    if (lines.length === 0) return true;
    try {
      await this.copyAndMove(lines, moved, { writer, seq });
    } catch (err) {
      if ((err as { code?: unknown }).code !== UNIQUE_VIOLATION) throw err;
      return false;
    }
    this.writePaths.copy++;
    return true;
  }

  /**
   * A worker's batch (worker-books.ts): its usage rows and charges, added to
   * the writer's parts of the balances, each part stamped with `seq`.
   * Idempotent: a retry (`firstAttempt` false), or a first attempt that met
   * a row already stored, skips what is there, so a batch written twice (a
   * lost answer, a replay after the worker died) counts once.
   */
  async writeWriterBatch(rows: readonly SettledRow[], writer: string, seq: number, firstAttempt: boolean): Promise<void> {
    if (rows.length === 0) return;
    if (firstAttempt) {
      try {
        await this.copyBatch(rows, { writer, seq });
        this.writePaths.copy++;
        return;
      } catch (err) {
        if ((err as { code?: unknown }).code !== UNIQUE_VIOLATION) throw err;
      }
    }
    await this.pool.query({ name: 'ledger_write_writer_batch', text: WRITE_WRITER_BATCH, values: [pgJson(rows.map(batchRow)), writer, seq] });
    this.writePaths.statement++;
  }

  /** The writer's parts join the organizations' rows (it is gone, its batches all written); the sums read stay the same. */
  async foldWriter(writer: string): Promise<string[]> {
    const { rows } = await this.pool.query<{ id: string }>(FOLD_WRITER, [writer]);
    return rows.map((r) => r.id);
  }

  async writeCredit(entries: Entry[]): Promise<StoredCredit | null> {
    const credit = entries[entries.length - 1];
    const { rows } = await this.pool.query<{ id: string }>(WRITE_CREDIT, [pgJson(entries), credit.expiresAt]);
    if (rows.some((r) => r.id === credit.id)) return null;
    const prior = await this.pool.query('SELECT amount_micros, funding FROM ledger_postings WHERE id = $1', [credit.id]);
    return { amount: Number(prior.rows[0]?.amount_micros ?? 0), funding: prior.rows[0]?.funding ?? credit.funding };
  }
}
