// Workers' books beyond one primary's memory (issue 32's Redis host, and a
// whole host's crash): the books' directory belongs to one running primary;
// a batch is told once written when the owner may change (reportWhenWritten);
// a batch told twice counts once; and a writer folded by another process
// ('folded') is counted once again by the actor that had heard of it.
// Against the in-memory store; the Redis host end to end is
// test/reliability/redis-workers.test.ts and test/e2e/scale-out-kill.test.ts.
import t from 'tap';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FakeStore } from './fake-store.js';
import { makeLedger, ORG, usage } from './helpers.js';
import type { BookedCall } from '../../src/ledger/books-file.js';
import { closeBooksDir, openBooksDir } from '../../src/ledger/books-replay.js';
import { spendsOf } from '../../src/ledger/worker-batch.js';
import { WorkerBooks } from '../../src/ledger/worker-books.js';
import type { SpentReport } from '../../src/ledger/protocol.js';
import { createLogger } from '../../src/log/logger.js';
import { tempDir } from '../helpers/gateway.js';

const WRITER = '4242-abcd';
const OWNER = 'worker:1';

function booked(i: number, charged: number, taken = 1000): BookedCall {
  return { usage: usage(`w${i}`, charged, taken), allotment: 'a1', taken };
}

t.test('the books directory belongs to one running primary', async (t) => {
  const dataDir = tempDir('books-dir-test-');
  const dir = openBooksDir(dataDir);
  t.equal(dir, join(dataDir, 'books'));
  t.equal(readFileSync(join(dir, 'primary.pid'), 'utf8').trim(), String(process.pid), 'marked as this primary\'s');
  t.equal(openBooksDir(dataDir), dir, 'taken again by the same primary');

  const live = spawn('sleep', ['30'], { stdio: 'ignore' });
  t.teardown(() => void live.kill('SIGKILL'));
  writeFileSync(join(dir, 'primary.pid'), `${live.pid}\n`);
  t.throws(() => openBooksDir(dataDir), /belongs to a running primary .*own data_dir/, 'refused while another primary lives');

  const dead = spawn('true', [], { stdio: 'ignore' });
  await new Promise((r) => dead.once('exit', r));
  writeFileSync(join(dir, 'primary.pid'), `${dead.pid}\n`);
  writeFileSync(join(dir, `${WRITER}.jsonl`), '');
  t.equal(openBooksDir(dataDir), dir, 'a dead primary\'s directory is taken over');
  t.same(closeBooksDir(dir), { left: 1 }, 'a file left is counted at a clean stop');
  t.notOk(existsSync(join(dir, 'primary.pid')), 'and the directory is free again');
});

t.test('reportWhenWritten: a batch is told once in the store, and written() waits for it', async (t) => {
  const dir = tempDir('books-test-');
  const store = new FakeStore();
  store.addOrg(ORG, 1_000_000);
  const reports: Array<SpentReport & { stored: number }> = [];
  const books = new WorkerBooks({
    store,
    writer: WRITER,
    dir,
    flushMs: 10_000,
    report: (r) => reports.push({ ...r, stored: store.usage.size }),
    reportWhenWritten: true,
    logger: createLogger('silent', 'test'),
  });
  t.teardown(() => books.close());
  await books.settle(usage('x1', 700, 1000), 'a1', 1000);
  await books.written();
  t.same(reports, [], 'nothing cut yet: nothing to wait for, nothing told');
  books.cut();
  t.same(reports, [], 'cut, not yet written: not told');
  await books.written();
  t.equal(reports.length, 1, 'told once written');
  t.equal(reports[0].stored, 1, 'its usage row was in the store when it was told');
  t.same(reports[0].spends, spendsOf([{ usage: usage('x1', 700, 1000), allotment: 'a1', taken: 1000 }]));
});

t.test('a batch told twice counts once; a writer folded elsewhere is counted once again', async (t) => {
  const store = new FakeStore();
  store.addOrg(ORG, 1_000_000);
  const { ledger } = makeLedger(store);
  t.teardown(() => ledger.close());
  ledger.recalls.recaller = () => false;
  const r = await ledger.reserve({ requestId: 'first', orgId: ORG, funding: 'balance', amount: 1000, owner: OWNER, allot: { id: 'a1', money: 100_000, slots: 32, refund: null, ask: 1 } });
  t.ok(r.ok && r.allotted !== undefined, 'an allotment granted');
  await ledger.release({ requestId: 'first', orgId: ORG });

  const b1 = [booked(1, 700), booked(2, 300)];
  await store.writeWriterBatch(b1.map((c) => ({ usage: c.usage, writer: WRITER })), WRITER, 1);
  const report = { writer: WRITER, seq: 1, spends: spendsOf(b1) };
  await ledger.spent(report);
  await ledger.spent(report); // applied again after a lost acknowledgement
  t.equal(ledger.stats().heldMicros, 100_000 - 2000, 'the allotment gave up what its calls took, once');
  t.equal((await ledger.account(ORG))!.balance, 1_000_000 - 1000, 'charged once');

  // Another process writes the writer's last calls and folds its parts; this actor reloads before it hears so.
  const b2 = [booked(3, 500)];
  await store.writeWriterBatch(b2.map((c) => ({ usage: c.usage, writer: WRITER })), WRITER, 2);
  const folded = await store.foldWriter(WRITER);
  t.same(folded, [ORG], 'the fold names the organizations it moved');
  await ledger.reconcile();
  t.equal((await ledger.account(ORG))!.balance, 1_000_000 - 1000 - 1500, 'before it hears: batch 1 counted twice (never too little)');
  await ledger.folded({ writer: WRITER, orgIds: folded });
  t.equal((await ledger.account(ORG))!.balance, 1_000_000 - 1500, 'after: every call once, told or not');
  await ledger.reconcile();
  t.equal((await ledger.account(ORG))!.balance, 1_000_000 - 1500, 'and a later reload agrees');
});
