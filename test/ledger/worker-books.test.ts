// Issue 32: calls settled in their own worker (src/ledger/worker-books.ts).
// The actor hears of them per batch and must count each batch exactly once
// however its reloads interleave with the worker's writes; the worker's file
// is what the primary replays when the worker dies; and the worker's own
// writes are idempotent. Against the in-memory store and a fake clock; the
// real cluster with kill -9 is test/ledger/allotments.test.ts and
// test/reliability/workers.test.ts.
import t from 'tap';
import { writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { FakeStore } from './fake-store.js';
import { makeLedger, ORG, usage } from './helpers.js';
import { readGoneWorker, type BookedCall } from '../../src/ledger/books-file.js';
import { spendsOf } from '../../src/ledger/worker-batch.js';
import { WorkerBooks } from '../../src/ledger/worker-books.js';
import type { SpentReport } from '../../src/ledger/protocol.js';
import { createLogger } from '../../src/log/logger.js';
import { tempDir } from '../helpers/gateway.js';

const OWNER = 'worker:1';
const WRITER = '4242-abcd';

/** An allotment granted to OWNER along with one reservation, as a worker's first call asks for it. */
async function grant(ledger: ReturnType<typeof makeLedger>['ledger'], money: number): Promise<void> {
  const r = await ledger.reserve({ requestId: 'first', orgId: ORG, funding: 'balance', amount: 1000, owner: OWNER, allot: { id: 'a1', money, slots: 32, refund: null, ask: 1 } });
  if (!r.ok || r.allotted === undefined) throw new Error('no allotment granted');
  await ledger.release({ requestId: 'first', orgId: ORG });
}

function booked(i: number, charged: number, taken = 1000): BookedCall {
  return { usage: usage(`w${i}`, charged, taken), allotment: 'a1', taken };
}

t.test('a batch told to the actor is counted once, whether a reload reads it before or after the report', async (t) => {
  const store = new FakeStore();
  store.addOrg(ORG, 1_000_000);
  const { ledger } = makeLedger(store);
  t.teardown(() => ledger.close());
  ledger.recalls.recaller = () => false; // the allotment's owner is this test: account() recalls nothing
  await grant(ledger, 100_000);
  t.equal(ledger.stats().heldMicros, 100_000, 'the allotment holds its grant');
  const write = (calls: BookedCall[], seq: number) => store.writeWriterBatch(calls.map((c) => ({ usage: c.usage, writer: WRITER })), WRITER, seq);

  // Batch 1: told, then written, then a reload.
  const b1 = [booked(1, 700), booked(2, 300)];
  await ledger.spent({ writer: WRITER, seq: 1, spends: spendsOf(b1) });
  t.equal(ledger.stats().heldMicros, 98_000, 'the allotment gave up what its calls took');
  await write(b1, 1);
  await ledger.reconcile();
  t.equal((await store.loadAccount(ORG))!.balance, 1_000_000 - 1000, 'the store reads row + parts');
  t.equal(store.orgs.get(ORG)!.balance, 1_000_000, 'the organization row itself is untouched');
  // Batch 2: written and read by a reload BEFORE its report arrives: the report then moves no money.
  const b2 = [booked(3, 500)];
  await write(b2, 2);
  await ledger.reconcile();
  await ledger.spent({ writer: WRITER, seq: 2, spends: spendsOf(b2) });
  // Batch 3: told, not yet written, a reload in between: still counted (the part's seq is behind it).
  const b3 = [booked(4, 200)];
  await ledger.spent({ writer: WRITER, seq: 3, spends: spendsOf(b3) });
  await ledger.reconcile();
  t.equal(ledger.stats().workerSettled, 4, 'four calls heard of in three batches');
  t.equal(ledger.stats().heldMicros, 100_000 - 4000, 'each batch lowered the allotment once');
  t.equal((await ledger.account(ORG))!.balance, 1_000_000 - 1700, 'memory: every batch counted exactly once across reloads');
  // Batch 3 reaches the store; the writer is gone: its parts fold into the row, and memory stays the same.
  await write(b3, 3);
  await ledger.writersGone(4242, []);
  await ledger.close();
  t.equal(store.orgs.get(ORG)!.balance, 1_000_000 - 1700, 'folded: the row holds what its parts held');
  t.equal(store.parts.get(ORG)?.size ?? 0, 0, 'no part left');
  await ledger.reconcile();
  t.equal((await ledger.account(ORG))!.balance, 1_000_000 - 1700, 'and memory agrees after a reload');
});

t.test('a gone worker: what the actor never heard of is counted before its allotment goes, and written once', async (t) => {
  const store = new FakeStore();
  store.addOrg(ORG, 1_000_000);
  const { ledger } = makeLedger(store);
  t.teardown(() => ledger.close());
  ledger.recalls.recaller = () => false;
  await grant(ledger, 100_000);
  // Batch 1 was told and written; batch 2 was cut (in the file) but its report never left; one call after the last cut.
  const b1 = [booked(1, 700)];
  await ledger.spent({ writer: WRITER, seq: 1, spends: spendsOf(b1) });
  await store.writeWriterBatch(b1.map((c) => ({ usage: c.usage, writer: WRITER })), WRITER, 1);
  let removed = false;
  const found = [{ writer: WRITER, batches: [{ seq: 2, calls: [booked(2, 400)] }], uncut: [booked(3, 100)], remove: () => void (removed = true) }];
  await ledger.writersGone(4242, found);
  t.equal(ledger.stats().heldMicros, 100_000 - 3000, 'the unheard calls left the allotment before it is voided');
  ledger.ownerGone(OWNER);
  t.equal(ledger.stats().heldMicros, 0, 'then the allotment went with its owner');
  await ledger.close();
  t.equal(store.usage.size, 3, 'every settled call has its usage row');
  t.equal(store.orgs.get(ORG)!.balance, 1_000_000 - 1200, 'and its charge, once');
  t.ok(removed, 'its file removed once written');
  const { ledger: again } = makeLedger(store);
  t.teardown(() => again.close());
  again.recalls.recaller = () => false;
  t.equal((await again.account(ORG))!.balance, 1_000_000 - 1200, 'a fresh actor reads the same');
});

t.test('a worker heard gone after the ledger began to close: its file stays for the next start, and nothing throws', async (t) => {
  const store = new FakeStore();
  store.addOrg(ORG, 1_000_000);
  const { ledger } = makeLedger(store);
  ledger.recalls.recaller = () => false;
  await grant(ledger, 100_000);
  await ledger.close();
  // As a pool that has ended: every write now fails.
  store.poison.add('w1');
  let removed = false;
  const found = [{ writer: WRITER, batches: [], uncut: [booked(1, 700)], remove: () => void (removed = true) }];
  const writes = store.writes;
  await ledger.writersGone(4242, found);
  await new Promise((r) => setTimeout(r, 300)); // a replay's first retry would come after 100 ms
  t.equal(store.writes, writes, 'no write is tried on a store being closed');
  t.notOk(removed, 'the file is kept, whole, for the next start');
  t.equal(store.usage.size, 0);
});

t.test('the books file: cut and done lines, a torn last line, read once', async (t) => {
  const dir = tempDir('books-test-');
  const line = (c: BookedCall): string => JSON.stringify({ u: c.usage, a: c.allotment, t: c.taken }) + '\n';
  writeFileSync(
    join(dir, `${WRITER}.jsonl`),
    line(booked(1, 1)) + '{"cut":1}\n' + '{"done":1}\n' + line(booked(2, 2)) + '{"cut":2}\n' + line(booked(3, 3)) + '{"u":{"requestId":"w4","or',
  );
  writeFileSync(join(dir, '999-other.jsonl'), line(booked(9, 9)));
  const found = readGoneWorker(dir, 4242);
  t.equal(found.length, 1, 'only the gone worker\'s file');
  t.equal(found[0].writer, WRITER);
  t.same(found[0].batches.map((b) => [b.seq, b.calls.map((c) => c.usage.requestId)]), [[2, ['w2']]], 'batch 1 is done; batch 2 is not');
  t.same(found[0].uncut.map((c) => c.usage.requestId), ['w3'], 'the torn line is skipped (its settlement never resolved)');
  t.ok(existsSync(join(dir, `${WRITER}.jsonl`)), 'kept until written');
  found[0].remove();
  t.notOk(existsSync(join(dir, `${WRITER}.jsonl`)), 'removed once written');
  t.ok(existsSync(join(dir, '999-other.jsonl')));
});

t.test('WorkerBooks: settle resolves once in the file; a batch is told then written; the file empties when all is written', async (t) => {
  const dir = tempDir('books-test-');
  const store = new FakeStore();
  store.addOrg(ORG, 1_000_000);
  const reports: SpentReport[] = [];
  const books = new WorkerBooks({ store, writer: WRITER, dir, flushMs: 10_000, report: (r) => reports.push(r), logger: createLogger('silent', 'test') });
  const u1 = usage('x1', 1500, 1000);
  const u2 = usage('x2', Number.NaN, 1000);
  await Promise.all([books.settle(u1, 'a1', 1000), books.settle(u2, 'a1', 1000)]);
  t.equal(u1.overdraftMicros, 500, 'the part above what the call took is overdraft');
  t.equal(u2.chargedMicros, 1000, 'a charge that is not a whole number takes what the call took');
  const inFile = readGoneWorker(dir, 4242);
  t.same(inFile[0].uncut.map((c) => c.usage.requestId), ['x1', 'x2'], 'both rows were in the file when settle resolved');
  books.cut();
  t.same(reports, [{ writer: WRITER, seq: 1, spends: [{ orgId: ORG, funding: 'balance', allotment: 'a1', taken: 2000, charged: 2500, overdraft: 500, calls: 2 }] }]);
  await books.close();
  t.equal(store.usage.size, 2, 'written by the worker');
  t.equal((await store.loadAccounts([ORG])).get(ORG)!.balance, 1_000_000 - 2500);
  t.notOk(existsSync(join(dir, `${WRITER}.jsonl`)), 'nothing left to replay: the file is gone');
});

t.test('WorkerBooks: a batch goes by COPY as its made lines; a retry, a stored row or a refused row by the statement, rows read back whole', async (t) => {
  const setup = () => {
    const dir = tempDir('books-test-');
    const store = new FakeStore();
    store.addOrg(ORG, 1_000_000);
    const books = new WorkerBooks({ store, writer: WRITER, dir, flushMs: 10_000, report: () => {}, logger: createLogger('silent', 'test') });
    return { store, books };
  };
  const rows = () => [
    { ...usage('y1', 700, 1000), modelId: 'm\t1\n\\', supplier: null, ttfbMs: null },
    usage('y2', 0, 1000),
    { ...usage('y3', 300, 1000, 'package'), finishedAt: 1_764_000_000_999 },
  ];
  const settleAll = async (books: WorkerBooks, us: ReturnType<typeof rows>) => {
    for (const u of us) await books.settle(u, u.funding === 'package' ? 'a2' : 'a1', 1000);
  };

  {
    const { store, books } = setup();
    const us = rows();
    await settleAll(books, us);
    await books.close();
    t.equal(store.copies, 1, 'one batch, by COPY');
    t.same([...store.usage.values()], us, 'every row stored as settled, odd text and nulls too');
    const account = (await store.loadAccounts([ORG])).get(ORG)!;
    t.same([account.balance, account.package], [1_000_000 - 700, -300], 'the parts moved by exactly the charges (FakeStore checks the sums against the lines)');
  }
  {
    // A batch larger than its first buffer, in text beyond ASCII: grown, and nothing lost or cut mid-character.
    const { store, books } = setup();
    const many = Array.from({ length: 400 }, (_, i) => ({ ...usage(`z${i}`, 10, 1000), modelId: `模型-é-🙂-${'ü'.repeat(i % 90)}` }));
    await Promise.all(many.map((u) => books.settle(u, 'a1', 1000)));
    await books.close();
    t.equal(store.copies, 1, 'one batch, by COPY');
    t.same([...store.usage.values()], many, `${many.length} rows, ~${Math.round(many.reduce((n, u) => n + Buffer.byteLength(u.modelId), 0) / 1024)} KB of model names, each stored as settled`);
  }
  {
    const { store, books } = setup();
    store.failNext = 'connection';
    const us = rows();
    await settleAll(books, us);
    await books.close();
    t.same([...store.usage.values()], us, 'after a failed first attempt: the retry reads the rows back from the lines, whole');
    t.equal((await store.loadAccounts([ORG])).get(ORG)!.balance, 1_000_000 - 700, 'charged once');
  }
  {
    const { store, books } = setup();
    store.failNext = 'lost-answer';
    await settleAll(books, rows());
    await books.close();
    t.equal(store.usage.size, 3, 'a lost answer: the retry finds the rows stored');
    t.equal((await store.loadAccounts([ORG])).get(ORG)!.balance, 1_000_000 - 700, 'and charges them once');
  }
  {
    const { store, books } = setup();
    store.poison.add('y1');
    await settleAll(books, rows());
    await books.close();
    t.same([...store.usage.keys()].sort(), ['y2', 'y3'], 'a row the store refuses is dropped; the others are written');
    t.same((await store.loadAccounts([ORG])).get(ORG)!.package, -300);
  }
});

t.test('a stream\'s progress kept in the books: it outlives the file starting over, a dead worker\'s stream settles on it, an ended one does not', async (t) => {
  const dir = tempDir('books-test-');
  const store = new FakeStore();
  store.addOrg(ORG, 1_000_000);
  const books = new WorkerBooks({ store, writer: WRITER, dir, flushMs: 10_000, report: () => {}, logger: createLogger('silent', 'test') });
  t.teardown(() => books.close());
  const streaming = { ...usage('s1', 5000, 1000), outcome: 'interrupted' };
  books.progress(streaming, 'a1', 1000);
  books.progress({ ...usage('s2', 300, 1000), outcome: 'interrupted' }, 'a1', 1000);
  await books.settle(usage('done1', 100, 1000), 'a1', 1000);
  books.forget('s2'); // released, or settled through the actor
  books.cut();
  await new Promise((r) => setTimeout(r, 50));
  t.equal(store.usage.size, 1, 'the settled call was written');
  t.same(books.lastProgress('s1')?.requestId, 's1');
  const found = readGoneWorker(dir, 4242);
  t.same(found[0].batches, [], 'every batch done: the file started over');
  t.same(found[0].uncut.map((c) => [c.usage.requestId, c.usage.outcome, c.usage.chargedMicros]), [['s1', 'interrupted', 1000]], 'the stream still running is settled on its last progress, never above what it took; the ended one is not');
});
