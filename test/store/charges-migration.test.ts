// Migration 010 moves every charge entry onto its usage row: the journal as
// ledger_entries shows it, and every balance, must be the same after it as
// before, and a charge written before it must still count once.
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { createPool } from '../../src/store/pool.js';
import { migrate } from '../../src/store/migrate.js';
import { MIGRATIONS } from '../../src/store/migrations/index.js';
import { PgLedgerStore } from '../../src/ledger/store.js';
import { testDatabase } from '../helpers/services.js';
import { usage } from '../ledger/helpers.js';

t.test('charge entries written before migration 010 move onto their usage rows, the journal and balances unchanged', async (t) => {
  const url = await testDatabase(t);
  if (url === null) return;
  const pool = createPool(url, 2);
  t.teardown(() => pool.end());
  // The schema as 009 left it.
  await pool.query('CREATE TABLE schema_migrations (id integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())');
  for (const m of MIGRATIONS.filter((m) => m.id <= 9)) {
    await pool.query(m.sql);
    await pool.query('INSERT INTO schema_migrations (id, name) VALUES ($1, $2)', [m.id, m.name]);
  }
  const org = randomUUID();
  await pool.query(`INSERT INTO organizations (id, name, balance_micros, package_micros) VALUES ($1, 'o', 10000000, 50000)`, [org]);
  await pool.query(`INSERT INTO ledger_entries (id, org_id, kind, funding, amount_micros) VALUES ('opening:' || $1::text, $1::uuid, 'opening', 'balance', 10000000),
    ('credit:p1', $1::uuid, 'credit', 'package', 50000)`, [org]);
  // Rows and entries as 009's statement wrote them: a charged row with its entry, a row charged nothing without one.
  const rows = [usage('r1', 700, 1000, 'balance', org), usage('r2', 0, 1000, 'balance', org), usage('r3', 300, 1000, 'package', org)];
  for (const u of rows) {
    await pool.query(
      `INSERT INTO usage_records (request_id, org_id, key_id, model_id, supplier, surface, funding, input_tokens, cached_input_tokens, output_tokens,
         image_units, reserved_micros, charged_micros, outcome, metered_source, hold_expired, ttfb_ms, total_ms, finished_at)
       VALUES ($1, $2, 'k1', 'm1', 'sim', 'chat', $3, 3, 0, 5, 0, 1000, $4, 'completed', 'supplier', false, 1, 2, now())`,
      [u.requestId, org, u.funding, u.chargedMicros],
    );
    if (u.chargedMicros > 0) {
      await pool.query(`INSERT INTO ledger_entries (id, org_id, kind, funding, amount_micros, request_id, writer) VALUES ($1, $2, 'charge', $3, $4, $5, $6)`,
        ['charge:' + u.requestId, org, u.funding, -u.chargedMicros, u.requestId, 'w:' + u.requestId]);
      await pool.query(`UPDATE organizations SET ${u.funding}_micros = ${u.funding}_micros - $2 WHERE id = $1`, [org, u.chargedMicros]);
    }
  }
  const journal = `SELECT id, org_id, kind, funding, amount_micros::text, request_id, writer FROM ledger_entries WHERE org_id = $1 ORDER BY id`;
  const before = (await pool.query(journal, [org])).rows;
  t.equal(before.length, 4, 'opening, credit and two charges before');

  t.same(await migrate(pool), MIGRATIONS.filter((m) => m.id > 9).map((m) => m.id), 'only the migrations after 009 are applied, 010 first');
  t.same((await pool.query(journal, [org])).rows, before, 'ledger_entries reads the same journal, entry for entry');
  const kept = (await pool.query(`SELECT id FROM ledger_postings ORDER BY id`)).rows.map((r) => r.id);
  t.same(kept, ['credit:p1', 'opening:' + org], 'no charge is left a posting of its own');
  const tags = (await pool.query(`SELECT request_id, charge_writer FROM usage_records ORDER BY request_id`)).rows;
  t.same(tags, [{ request_id: 'r1', charge_writer: 'w:r1' }, { request_id: 'r2', charge_writer: null }, { request_id: 'r3', charge_writer: 'w:r3' }], 'each charge on its row, with its tag');

  const store = new PgLedgerStore(pool);
  const account = (await store.loadAccounts([org], ['charge:r1', 'charge:r2', 'credit:p1', 'charge:nope'])).get(org)!;
  t.equal(account.balance, 10_000_000 - 700);
  t.equal(account.package, 50_000 - 300);
  t.same([...(account.journaled ?? [])].sort(), ['charge:r1', 'credit:p1'], 'a charge stored before the migration is found as journaled; a row charged nothing is not');
  // A repeated settlement of a charge written before the migration counts nothing; a new one counts once.
  const stored = await store.writeBatch([{ usage: usage('r1', 700, 1000, 'balance', org), writer: 'w:again' }, { usage: usage('r4', 50, 1000, 'balance', org), writer: 'w:r4' }], true);
  t.same([...stored], ['charge:r4'], 'only the new charge is stored by the write');
  const sums = (await pool.query(`SELECT m.balance_micros::text AS b, (SELECT sum(amount_micros) FROM ledger_entries WHERE org_id = $1 AND funding = 'balance')::text AS j
                                  FROM organization_money m WHERE m.id = $1`, [org])).rows[0];
  t.same(sums, { b: String(10_000_000 - 750), j: String(10_000_000 - 750) }, 'the balance is its journal\'s sum');
});
