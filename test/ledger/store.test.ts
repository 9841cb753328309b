// The SQL of the ledger, on the test PostgreSQL and on the embedded one: one
// write moves the journal, the balances and the usage rows together (by COPY
// on a first attempt, else by one statement); a repeat inserts nothing; a
// retry recognises its own committed write.
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import t, { type Test } from 'tap';
import type { Entry } from '../../src/ledger/records.js';
import { listUsage } from '../../src/console/usage-store.js';
import { createOrganization, readOrganization, updateOrganization } from '../../src/organizations/store.js';
import type { UsageRow } from '../../src/ledger/protocol.js';
import { PgLedgerStore, type SettledRow } from '../../src/ledger/store.js';
import { usageLine } from '../../src/ledger/usage-line.js';
import { openEmbeddedStore } from '../../src/store/embedded.js';
import { migrate } from '../../src/store/migrate.js';
import { createPool, type Pool } from '../../src/store/pool.js';
import { tempDir } from '../helpers/gateway.js';
import { proxiedDatabase } from '../helpers/tcp-proxy.js';
import { testDatabase } from '../helpers/services.js';
import { usage } from './helpers.js';

async function suite(t: Test, pool: Pool): Promise<void> {
  await migrate(pool);
  const store = new PgLedgerStore(pool);
  const orgId = randomUUID();
  const org = await createOrganization(pool, orgId, 'Store test', 10_000_000);
  t.equal(org.balance_micros, 10_000_000);
  const opening = await pool.query('SELECT kind, amount_micros FROM ledger_entries WHERE org_id = $1', [orgId]);
  t.same(opening.rows, [{ kind: 'opening', amount_micros: 10_000_000 }], 'the opening balance is a journal entry');

  const row = (await store.loadAccount(orgId))!;
  t.same(row, { balance: 10_000_000, package: 0, packageExpiresAt: null, quotaPerSecond: null, quotaPerMinute: null, journaled: new Set(), writerSeqs: new Map() });
  t.equal(await store.loadAccount(randomUUID()), null);
  t.equal(await store.loadAccount('not-a-uuid'), null);

  // r2 charged nothing: a usage row and no entry.
  const rows = [
    { usage: usage('r1', 1500, 5000, 'balance', orgId), writer: 't:1' },
    { usage: usage('r2', 0, 5000, 'balance', orgId), writer: null },
    { usage: usage('r3', 2500, 5000, 'balance', orgId), writer: 't:3' },
  ];
  const stored = await store.writeBatch(rows);
  t.same([...stored].sort(), ['charge:r1', 'charge:r3']);
  const entries = await pool.query(
    "SELECT id, org_id, kind, funding, amount_micros, request_id, expires_at, note, writer FROM ledger_entries WHERE kind = 'charge' AND org_id = $1 ORDER BY id",
    [orgId],
  );
  t.same(
    entries.rows,
    [
      { id: 'charge:r1', org_id: orgId, kind: 'charge', funding: 'balance', amount_micros: -1500, request_id: 'r1', expires_at: null, note: null, writer: 't:1' },
      { id: 'charge:r3', org_id: orgId, kind: 'charge', funding: 'balance', amount_micros: -2500, request_id: 'r3', expires_at: null, note: null, writer: 't:3' },
    ],
    'each row with a writer has its charge entry, as chargeEntry makes it, tagged; a row without one has none',
  );
  t.equal((await store.loadAccount(orgId))!.balance, 10_000_000 - 4000);

  // A retry of the same write (its answer lost): recognised by its tags, nothing moves twice.
  const again = await store.writeBatch(rows);
  t.same([...again].sort(), ['charge:r1', 'charge:r3']);
  // A first attempt does not look for an earlier one (the journal says so when no write carried its rows before).
  const first = await store.writeBatch(rows, true);
  t.same([...first], [], 'a first attempt finds no earlier attempt of its own');
  // A genuine repeat (another write's tags): not stored, nothing moves.
  const repeat = await store.writeBatch([{ usage: usage('r1', 1500, 5000, 'balance', orgId), writer: 't:99' }]);
  t.same([...repeat], []);
  t.equal((await store.loadAccount(orgId))!.balance, 10_000_000 - 4000);
  const page = await listUsage(pool, orgId, 10);
  t.equal(page.requests, 3);
  t.equal(page.chargedMicros, 4000n, 'the total, exact as a bigint');
  t.equal(page.rows.length, 3);
  const sum = await pool.query('SELECT sum(amount_micros)::bigint AS s FROM ledger_entries WHERE org_id = $1', [orgId]);
  t.equal(Number(sum.rows[0].s), 10_000_000 - 4000, 'balance = journal sum');

  // A package credit with an expiry, then a replay of it.
  const expires = new Date(Date.now() + 86_400_000).toISOString();
  const credit: Entry = { id: `credit:${orgId}:k`, orgId, kind: 'credit', funding: 'package', amount: 7000, requestId: null, expiresAt: expires, note: 'trial' };
  t.equal(await store.writeCredit([credit]), null);
  const after = (await store.loadAccount(orgId))!;
  t.equal(after.package, 7000);
  t.equal(after.packageExpiresAt, Date.parse(expires));
  t.same(await store.writeCredit([{ ...credit, amount: 1 }]), { amount: 7000, funding: 'package' }, 'a replay answers what the first credit was');
  t.equal((await store.loadAccount(orgId))!.package, 7000);

  // Name and quotas edit; money does not.
  const edited = await updateOrganization(pool, orgId, { quotaPerSecond: 5, name: 'Renamed' });
  t.equal(edited!.name, 'Renamed');
  t.equal((await store.loadAccount(orgId))!.quotaPerSecond, 5);
  t.equal((await readOrganization(pool, orgId))!.balance_micros, 10_000_000 - 4000);
  const many = await store.loadAccounts([orgId, randomUUID()]);
  t.equal(many.size, 1);
  const watched = await store.loadAccounts([orgId], ['charge:r1', 'charge:r2', 'charge:never']);
  t.same([...watched.get(orgId)!.journaled!], ['charge:r1'], 'a load says which of the entries asked about the journal holds');

  // Text with a lone surrogate (a credit's note is the operator's text; JSON.stringify escapes it, and
  // PostgreSQL's json parser refuses the escape): stored as U+FFFD, and the statement's other rows with it.
  // Before: "invalid input syntax for type json" — a 503 on the credit (seen by the fuzz test), or a failed flush.
  const lone = { ...credit, id: `credit:${orgId}:lone`, funding: 'balance' as const, amount: 5, expiresAt: null, note: 'a\ud800b' };
  t.equal(await store.writeCredit([lone]), null, 'a note with a lone surrogate is written');
  const note = await pool.query('SELECT note FROM ledger_entries WHERE id = $1', [lone.id]);
  t.equal(note.rows[0].note, 'a\ufffdb', 'as U+FFFD');
  const odd = { ...usage('r-lone', 10, 100, 'balance', orgId), supplier: 'sim\udc00' };
  t.same([...(await store.writeBatch([{ usage: odd, writer: 't:lone' }]))], ['charge:r-lone'], 'a batch with one is written whole');
  t.equal((await store.loadAccount(orgId))!.balance, 10_000_000 - 4000 + 5 - 10);

  await copyPath(t, pool, store, orgId);
}

/**
 * A batch's first attempt goes by COPY: it must store exactly what the
 * statement stores (every column, odd text, nulls, both fundings), move the
 * balances by exactly its charges, and fall back to the statement, keeping
 * nothing of the COPY, when a row is already stored.
 */
async function copyPath(t: Test, pool: Pool, store: PgLedgerStore, orgId: string): Promise<void> {
  const start = (await store.loadAccount(orgId))!;
  const odd = (id: string, charged: number, funding: 'balance' | 'package'): UsageRow => ({
    ...usage(id, charged, 5000, funding, orgId),
    keyId: 'key\ud800', // a lone surrogate
    modelId: 'm\t1\n2\\3\r', // every character COPY's text format escapes
    supplier: null,
    meteredSource: null,
    ttfbMs: null,
    holdExpired: true,
    overdraftMicros: 7,
    finishedAt: 1_764_000_000_123,
  });
  const batch = (prefix: string): SettledRow[] => [
    { usage: odd(`${prefix}1`, 700, 'balance'), writer: `t:${prefix}1` },
    { usage: odd(`${prefix}2`, 0, 'balance'), writer: null },
    { usage: odd(`${prefix}3`, 300, 'package'), writer: `t:${prefix}3` },
  ];
  const copied = store.writePaths.copy;
  t.same([...(await store.writeBatch(batch('c'), true))].sort(), ['charge:c1', 'charge:c3'], 'a first attempt stores every entry');
  t.equal(store.writePaths.copy, copied + 1, 'by COPY');
  await store.writeBatch(batch('s')); // the same rows by the statement (not a first attempt)
  // Every column but the request id; the charge's writer tag without its prefix.
  const read = async (prefix: string): Promise<Array<Record<string, unknown>>> =>
    (await pool.query('SELECT * FROM usage_records WHERE request_id LIKE $1 ORDER BY request_id', [`${prefix}_`])).rows.map(
      ({ request_id: _id, charge_writer: writer, ...rest }) => ({ ...rest, charged_by: writer === null ? null : String(writer).replace(`t:${prefix}`, '') }),
    );
  const usageRows = await read('c');
  t.equal(usageRows.length, 3);
  t.same(usageRows, await read('s'), 'usage rows: COPY stores what the statement stores');
  t.match(usageRows[0], { key_id: 'key\ufffd', model_id: 'm\t1\n2\\3\r', supplier: null, metered_source: null, ttfb_ms: null, hold_expired: true, overdraft_micros: 7 });
  t.equal(new Date(usageRows[0].finished_at as Date).getTime(), 1_764_000_000_123, 'to the millisecond');
  const entries = (await pool.query("SELECT id, kind, funding, amount_micros, request_id, writer FROM ledger_entries WHERE id LIKE 'charge:c_' ORDER BY id")).rows;
  t.same(entries, [
    { id: 'charge:c1', kind: 'charge', funding: 'balance', amount_micros: -700, request_id: 'c1', writer: 't:c1' },
    { id: 'charge:c3', kind: 'charge', funding: 'package', amount_micros: -300, request_id: 'c3', writer: 't:c3' },
  ]);
  const after = (await store.loadAccount(orgId))!;
  t.equal(after.balance, start.balance - 700 - 700, 'the balance moved by both batches\' charges, exactly');
  t.equal(after.package, start.package - 300 - 300);

  // A first attempt with a row another writer stored: the COPY fails whole, the statement writes the rest.
  const [copies, statements] = [store.writePaths.copy, store.writePaths.statement];
  const mixed = [{ usage: odd('c1', 700, 'balance'), writer: 't:other' }, { usage: odd('c4', 40, 'balance'), writer: 't:c4' }];
  t.same([...(await store.writeBatch(mixed, true))], ['charge:c4'], 'only the new entry is stored by it');
  t.same([store.writePaths.copy, store.writePaths.statement], [copies, statements + 1], 'by the statement, after the COPY met the stored row');
  t.equal((await store.loadAccount(orgId))!.balance, start.balance - 700 - 700 - 40, 'the stored charge is not counted twice');
  const c4 = await pool.query("SELECT count(*)::int AS n FROM usage_records WHERE request_id = 'c4'");
  t.equal(c4.rows[0].n, 1, 'nothing of the failed COPY was kept twice');

  // A worker's batch sends the lines it made when it settled each call (worker-books.ts), and what they move.
  const rows = batch('w');
  const lines = Buffer.from(rows.map((r) => usageLine(r.usage, r.writer)).join(''));
  const moved = new Map([[orgId, [-700n, -300n] as const]]);
  t.equal(await store.copyWriterLines(lines, moved, 'wb', 1), true, 'taken by COPY');
  t.same(await read('w'), usageRows, 'usage rows: a worker\'s made lines store what the statement stores');
  const after2 = (await store.loadAccount(orgId))!;
  t.same([after2.balance, after2.package], [start.balance - 700 - 700 - 40 - 700, start.package - 300 - 300 - 300], 'its parts moved by its charges, exactly');
  t.same(after2.writerSeqs, new Map([['wb', 1]]), 'its part stamped with the batch');
  t.equal(await store.copyWriterLines(lines, moved, 'wb', 2), false, 'the same lines again: refused, a row is stored');
  const again = (await store.loadAccount(orgId))!;
  t.same([again.balance, again.package, again.writerSeqs], [after2.balance, after2.package, after2.writerSeqs], 'and nothing of it kept');

  // The rows and the parts' statement go in one query, whose values are written into its text (the simple protocol has no parameters).
  const linesOf = (prefix: string): Buffer => Buffer.from(batch(prefix).map((r) => usageLine(r.usage, r.writer)).join(''));
  const storedRows = async (prefix: string): Promise<number> => (await read(prefix)).length;
  const quoted = "w'b\\'; --";
  t.equal(await store.copyWriterLines(linesOf('q'), moved, quoted, 4), true, 'a writer with quotes and backslashes');
  t.same((await store.loadAccount(orgId))!.writerSeqs, new Map([['wb', 1], [quoted, 4]]), 'is stored as it is');
  const hostile = new Map([["00000000-0000-0000-0000-000000000000'}'::uuid[]); DROP TABLE usage_records; --", [-1n, 0n] as const]]);
  await t.rejects(store.copyWriterLines(linesOf('h'), hostile, 'wb', 5), /not a uuid/, 'an organization id that is not a uuid is refused before anything is sent');
  t.equal(await storedRows('h'), 0, 'none of its rows stored');
  // Its parts' statement fails after its COPY (an organization that does not exist: the parts' foreign key): nothing of the query is kept.
  const nowhere = new Map([[randomUUID(), [-1n, 0n] as const]]);
  await t.rejects(store.copyWriterLines(linesOf('f'), nowhere, 'wb', 6), { code: '23503' }, 'the parts refuse an unknown organization');
  t.equal(await storedRows('f'), 0, 'and the COPY before it in the same query is rolled back');
  t.same((await store.loadAccount(orgId))!.writerSeqs, new Map([['wb', 1], [quoted, 4]]), 'no part moved');
  t.equal(await store.copyWriterLines(linesOf('f'), moved, 'wb', 7), true, 'the same rows again, on a sound connection: taken');
  t.equal(await storedRows('f'), 3);
}

t.test('real PostgreSQL', async (t) => {
  const url = await testDatabase(t);
  if (url === null) return;
  const pool = createPool(url, 2);
  t.teardown(() => pool.end());
  await suite(t, pool);
});

t.test('embedded PostgreSQL', async (t) => {
  const dir = tempDir();
  const embedded = await openEmbeddedStore(dir, { maxConnections: 8 });
  const pool = createPool(embedded.url, 2);
  t.teardown(async () => {
    await pool.end();
    await embedded.close();
    rmSync(dir, { recursive: true, force: true });
  });
  await suite(t, pool);
});

// A network that swallows packets mid-COPY: the write fails at pg's read timeout (10 s, store/pool.ts), and
// the ROLLBACK, queued behind the unanswered COPY, gets 1 s before the connection is dropped (inTransaction).
// With the pool's own timeout for it, that was 20 s in all, the journal's retries held up as long; the next
// write takes a fresh connection.
t.test('a COPY whose connection stalls fails at its timeout and its connection is dropped, not waited on again', async (t) => {
  const url = await testDatabase(t);
  if (url === null) return;
  const { proxy, url: viaProxy } = await proxiedDatabase(url);
  const pool = createPool(viaProxy, 1);
  t.teardown(async () => {
    await pool.end();
    await proxy.close();
  });
  await migrate(pool);
  const orgId = randomUUID();
  await createOrganization(pool, orgId, 'Stall test', 10_000_000);
  const store = new PgLedgerStore(pool);
  t.same([...(await store.writeBatch([{ usage: usage('before', 10, 100, 'balance', orgId), writer: 't:b' }], true))], ['charge:before']);
  proxy.stall();
  const started = Date.now();
  const failed = await store.writeBatch([{ usage: usage('stalled', 20, 100, 'balance', orgId), writer: 't:s' }], true).then(
    () => null,
    (err: Error) => err,
  );
  const ms = Date.now() - started;
  t.ok(failed !== null, `the stalled write fails (${failed?.message})`);
  t.ok(ms < 15_000, `at the read timeout, not after a second one for the ROLLBACK (${ms} ms)`);
  // The journal's retry: a fresh connection through the proxy (new connections carry bytes), by the statement.
  t.same([...(await store.writeBatch([{ usage: usage('stalled', 20, 100, 'balance', orgId), writer: 't:s' }]))], ['charge:stalled']);
  t.equal((await store.loadAccount(orgId))!.balance, 10_000_000 - 10 - 20, 'the retry stored the charge once');
});
