// The ledger core on an in-memory store and a fake clock: admission and holds
// are exact under concurrency, settlement is idempotent, leases release a dead
// owner's holds, a late settlement still charges, and the journal's write
// semantics (group commit, retries, repeats, bad rows) keep memory = store.
import t from 'tap';
import { FakeStore } from './fake-store.js';
import { SETTLE_CHECK_AFTER_MS } from '../../src/ledger/ledger.js';
import { FakeClock, makeLedger, ORG, sleep, usage } from './helpers.js';

const C = 1000; // micros per maximum-bound call

t.test('exactly K of 50 concurrent reservations are admitted; the rest are refused for funds', async (t) => {
  const store = new FakeStore();
  const K = 17;
  store.addOrg(ORG, K * C);
  const { ledger } = makeLedger(store);
  t.teardown(() => ledger.close());
  const replies = await Promise.all(Array.from({ length: 50 }, (_, i) => ledger.reserve({ requestId: `r${i}`, orgId: ORG, funding: 'balance', amount: C, owner: 'w1' })));
  t.equal(replies.filter((r) => r.ok).length, K);
  const refused = replies.filter((r) => !r.ok);
  t.equal(refused.length, 50 - K);
  t.ok(refused.every((r) => !r.ok && r.code === 'insufficient_funds' && r.required === C && r.available === 0));
  const view = (await ledger.account(ORG))!;
  t.equal(view.heldBalance, K * C);
  t.equal(view.balance - view.heldBalance, 0, 'available never below zero');
});

t.test('settle posts the charge and voids the rest; a repeat charges nothing', async (t) => {
  const store = new FakeStore();
  store.addOrg(ORG, 10_000);
  const { ledger } = makeLedger(store);
  t.teardown(() => ledger.close());
  t.same(await ledger.reserve({ requestId: 'a', orgId: ORG, funding: 'balance', amount: 4000, owner: 'w1' }), { ok: true });
  t.same(await ledger.reserve({ requestId: 'a', orgId: ORG, funding: 'balance', amount: 4000, owner: 'w1' }), { ok: true }, 'a retried reservation holds once');
  t.equal((await ledger.account(ORG))!.heldBalance, 4000);
  await ledger.settle({ usage: usage('a', 1234, 4000) });
  await ledger.settle({ usage: usage('a', 1234, 4000) });
  let view = (await ledger.account(ORG))!;
  t.equal(view.balance, 10_000 - 1234);
  t.equal(view.heldBalance, 0);
  await ledger.sync();
  t.equal(store.orgs.get(ORG)!.balance, 10_000 - 1234, 'store agrees');
  t.equal(store.usage.size, 1);
  t.equal(store.entries.size, 1);
  // A charge above the hold is posted in full (issue 12 item 7, below).
  await ledger.reserve({ requestId: 'b', orgId: ORG, funding: 'balance', amount: 100, owner: 'w1' });
  await ledger.settle({ usage: usage('b', 5000, 100) });
  view = (await ledger.account(ORG))!;
  t.equal(view.balance, 10_000 - 1234 - 5000);
  // A settled request cannot be reserved again.
  t.same(await ledger.reserve({ requestId: 'a', orgId: ORG, funding: 'balance', amount: 1, owner: 'w1' }), { ok: false, code: 'closed' });
  // A zero settlement writes a usage row and no journal entry.
  await ledger.reserve({ requestId: 'c', orgId: ORG, funding: 'balance', amount: 100, owner: 'w1' });
  await ledger.settle({ usage: usage('c', 0, 100) });
  await ledger.sync();
  t.equal(store.usage.size, 3);
  t.equal(store.entries.size, 2);
});

t.test('issue 12 item 7: a charge above the hold is posted in full and recorded as overdraft, even past zero', async (t) => {
  const store = new FakeStore();
  store.addOrg(ORG, 1000);
  const { ledger } = makeLedger(store);
  t.teardown(() => ledger.close());
  t.same(await ledger.reserve({ requestId: 'o1', orgId: ORG, funding: 'balance', amount: 600, owner: 'w1' }), { ok: true });
  t.same(await ledger.reserve({ requestId: 'o2', orgId: ORG, funding: 'balance', amount: 400, owner: 'w1' }), { ok: true });
  await ledger.settle({ usage: usage('o1', 900, 600) });
  let view = (await ledger.account(ORG))!;
  t.equal(view.balance, 100, 'the whole 900 charged, not the 600 held');
  t.equal(view.heldBalance, 400, 'the other hold still stands');
  await ledger.settle({ usage: usage('o2', 450, 400) });
  view = (await ledger.account(ORG))!;
  t.equal(view.balance, -350, 'below zero by the overdraft');
  t.equal(view.heldBalance, 0);
  t.equal((await ledger.reserve({ requestId: 'o3', orgId: ORG, funding: 'balance', amount: 0, owner: 'w1' })).ok, false, 'the debt refuses new calls');
  await ledger.sync();
  t.match(store.usage.get('o1'), { chargedMicros: 900, reservedMicros: 600, overdraftMicros: 300 });
  t.match(store.usage.get('o2'), { chargedMicros: 450, reservedMicros: 400, overdraftMicros: 50 });
  t.equal(store.orgs.get(ORG)!.balance, -350, 'store agrees');
  t.equal(store.journalSum(ORG), -(900 + 450), 'the journal carries both charges in full (the opening 1000 is not journalled here)');
  // An expired hold: the overdraft is counted against what was reserved.
  await ledger.settle({ usage: usage('gone', 70, 50) });
  await ledger.sync();
  t.match(store.usage.get('gone'), { chargedMicros: 70, overdraftMicros: 20, holdExpired: true });
  // Not a whole number of micros: the hold is charged, never NaN.
  await ledger.reserve({ requestId: 'nan', orgId: ORG, funding: 'balance', amount: 0, owner: 'w1' });
  await ledger.settle({ usage: usage('nan2', Number.NaN, 30) });
  await ledger.sync();
  t.match(store.usage.get('nan2'), { chargedMicros: 30, overdraftMicros: 0 });
});

t.test('an owner that stops renewing loses its holds after the lease; a late settlement still charges', async (t) => {
  const store = new FakeStore();
  store.addOrg(ORG, 3 * C);
  const { ledger, clock } = makeLedger(store, { holdLeaseMs: 1000 });
  t.teardown(() => ledger.close());
  for (const id of ['d1', 'd2', 'd3']) await ledger.reserve({ requestId: id, orgId: ORG, funding: 'balance', amount: C, owner: 'dead' });
  t.equal((await ledger.reserve({ requestId: 'x', orgId: ORG, funding: 'balance', amount: C, owner: 'alive' })).ok, false);
  clock.advance(600);
  ledger.heartbeat('alive');
  ledger.sweep();
  t.equal((await ledger.account(ORG))!.openHolds, 3, 'within the lease: still held');
  clock.advance(500);
  ledger.heartbeat('alive');
  ledger.sweep();
  const view = (await ledger.account(ORG))!;
  t.equal(view.openHolds, 0, 'after the lease: released');
  t.equal(view.heldBalance, 0);
  t.equal(ledger.stats().expiredHolds, 3);
  // The money is spendable again: another owner holds all of it.
  for (const id of ['n1', 'n2', 'n3']) t.equal((await ledger.reserve({ requestId: id, orgId: ORG, funding: 'balance', amount: C, owner: 'alive' })).ok, true);
  // The dead owner's settlement turns up after all: it charges, and the balance goes below zero (a debt).
  await ledger.settle({ usage: usage('d1', 700, C) });
  t.equal((await ledger.account(ORG))!.balance, 3 * C - 700);
  for (const id of ['n1', 'n2', 'n3']) await ledger.settle({ usage: usage(id, C, C) });
  t.equal((await ledger.account(ORG))!.balance, -700);
  t.equal((await ledger.reserve({ requestId: 'y', orgId: ORG, funding: 'balance', amount: 0, owner: 'alive' })).ok, false, 'a debt refuses even a free call');
  await ledger.sync();
  t.equal(store.usage.get('d1')!.holdExpired, true, 'the usage row says the hold had expired');
  t.equal(store.usage.get('n1')!.holdExpired, false);
  t.equal(store.orgs.get(ORG)!.balance, -700);
});

t.test('heartbeats keep holds alive; billing.hold_max_ms ends them anyway', async (t) => {
  const store = new FakeStore();
  store.addOrg(ORG, C);
  const { ledger, clock } = makeLedger(store, { holdLeaseMs: 1000, holdMaxMs: 10_000 });
  t.teardown(() => ledger.close());
  await ledger.reserve({ requestId: 'long', orgId: ORG, funding: 'balance', amount: C, owner: 'w' });
  for (let i = 0; i < 9; i++) {
    clock.advance(900);
    ledger.heartbeat('w');
    ledger.sweep();
  }
  t.equal((await ledger.account(ORG))!.openHolds, 1, '8.1 s of renewals: held');
  clock.advance(5000);
  ledger.heartbeat('w');
  ledger.sweep();
  t.equal((await ledger.account(ORG))!.openHolds, 0, 'past the maximum age: released');
});

t.test('no hold is ever older than billing.hold_max_ms, even between sweeps; its later settlement still charges', async (t) => {
  const store = new FakeStore();
  store.addOrg(ORG, 10 * C);
  // Lease 1000 ms: a sweep every 250 ms.
  const { ledger, clock } = makeLedger(store, { holdLeaseMs: 1000, holdMaxMs: 10_000 });
  t.teardown(() => ledger.close());
  await ledger.reserve({ requestId: 'old', orgId: ORG, funding: 'balance', amount: C, owner: 'w' });
  clock.advance(3000);
  await ledger.reserve({ requestId: 'young', orgId: ORG, funding: 'balance', amount: C, owner: 'w' });
  let oldest = 0;
  let voidedAt = -1;
  for (let at = 3000; at <= 12_000; at += 50) {
    ledger.heartbeat('w');
    if (at % 250 === 0) ledger.sweep();
    oldest = Math.max(oldest, ledger.stats().oldestHoldMs);
    if (voidedAt < 0 && (await ledger.account(ORG))!.openHolds === 1) voidedAt = at;
    clock.advance(50);
  }
  t.ok(oldest <= 10_000, `the oldest open hold was ${oldest} ms old at most`);
  t.ok(voidedAt >= 9750 && voidedAt <= 10_000, `the first hold was voided at ${voidedAt} ms, within one sweep of its maximum age`);
  t.equal((await ledger.account(ORG))!.openHolds, 1, 'the younger hold lives on: it is not 10 s old yet');
  await ledger.settle({ usage: usage('old', C / 2, C) });
  await ledger.sync();
  t.equal(store.usage.get('old')!.holdExpired, true, 'settled after its hold was voided');
  t.equal(store.orgs.get(ORG)!.balance, 10 * C - C / 2, 'and charged all the same');
});

t.test('package funding: no fallback to the balance; expiry refuses; credits forfeit an expired remainder', async (t) => {
  const store = new FakeStore();
  store.addOrg(ORG, 1_000_000, { package: 500, packageExpiresAt: 1_700_000_010_000 });
  const { ledger, clock } = makeLedger(store);
  t.teardown(() => ledger.close());
  const big = await ledger.reserve({ requestId: 'p1', orgId: ORG, funding: 'package', amount: 600, owner: 'w' });
  t.match(big, { ok: false, code: 'insufficient_funds', funding: 'package', available: 500, packageExpiredAt: null });
  t.equal((await ledger.reserve({ requestId: 'p2', orgId: ORG, funding: 'package', amount: 500, owner: 'w' })).ok, true);
  await ledger.settle({ usage: usage('p2', 200, 500, 'package') });
  clock.advance(20_000);
  const expired = await ledger.reserve({ requestId: 'p3', orgId: ORG, funding: 'package', amount: 1, owner: 'w' });
  t.match(expired, { ok: false, code: 'insufficient_funds', packageExpiredAt: new Date(1_700_000_010_000).toISOString() });
  const credit = await ledger.credit({ orgId: ORG, key: 'k1', amount: 1000, target: 'package', expiresAt: new Date(clock.now + 86_400_000).toISOString(), note: null });
  t.match(credit, { ok: true, replayed: false });
  const view = (await ledger.account(ORG))!;
  t.equal(view.package, 1000, 'the expired 300 were forfeited, not revived');
  t.equal(view.packageExpired, false);
  await ledger.sync();
  t.equal(store.orgs.get(ORG)!.package, 1000);
  t.equal(store.journalSum(ORG, 'package'), 1000 - 500, 'journal: +1000 credit, −300 forfeit, −200 charge (opening 500 not journalled here)');
  const replay = await ledger.credit({ orgId: ORG, key: 'k1', amount: 1000, target: 'package', expiresAt: null, note: null });
  t.match(replay, { ok: true, replayed: true, amount: 1000, target: 'package' });
  t.equal((await ledger.account(ORG))!.package, 1000, 'a replay credits nothing');
  t.equal((await ledger.reserve({ requestId: 'p4', orgId: ORG, funding: 'package', amount: 1000, owner: 'w' })).ok, true);
});

t.test('flush_ms = 0: settle resolves only once the charge is written, concurrent settlements share writes', async (t) => {
  const store = new FakeStore();
  store.addOrg(ORG, 100 * C);
  const { ledger } = makeLedger(store, { flushMs: 0 });
  t.teardown(() => ledger.close());
  for (let i = 0; i < 20; i++) await ledger.reserve({ requestId: `s${i}`, orgId: ORG, funding: 'balance', amount: C, owner: 'w' });
  let open!: () => void;
  store.gate = new Promise((r) => (open = r));
  let settled = 0;
  const all = Array.from({ length: 20 }, (_, i) => ledger.settle({ usage: usage(`s${i}`, 10, C) }).then(() => settled++));
  await sleep(30);
  t.equal(settled, 0, 'nothing acknowledged while the store has not answered');
  store.gate = null;
  open();
  await Promise.all(all);
  t.equal(store.usage.size, 20);
  t.ok(store.writes <= 3, `20 settlements in ${store.writes} writes`);
});

t.test('flush_ms > 0: settle is acknowledged from memory and written within the interval', async (t) => {
  const store = new FakeStore();
  store.addOrg(ORG, 100 * C);
  const { ledger } = makeLedger(store, { flushMs: 50 });
  t.teardown(() => ledger.close());
  await ledger.reserve({ requestId: 'f', orgId: ORG, funding: 'balance', amount: C, owner: 'w' });
  await ledger.settle({ usage: usage('f', 10, C) });
  t.equal(store.usage.size, 0, 'acknowledged before the write');
  await sleep(120);
  t.equal(store.usage.size, 1, 'written within flush_ms');
});

t.test('flush_ms > 0: settlements that come during a write wait for their own flush, not for the write to end', async (t) => {
  const store = new FakeStore();
  store.addOrg(ORG, 100 * C);
  const { ledger } = makeLedger(store, { flushMs: 150 });
  t.teardown(() => ledger.close());
  for (let i = 0; i < 11; i++) await ledger.reserve({ requestId: `g${i}`, orgId: ORG, funding: 'balance', amount: C, owner: 'w' });
  let open!: () => void;
  store.gate = new Promise((r) => (open = r));
  await ledger.settle({ usage: usage('g0', 10, C) });
  await sleep(200); // the first flush is in its write, held by the gate
  t.equal(store.writes, 1);
  for (let i = 1; i < 11; i++) await ledger.settle({ usage: usage(`g${i}`, 10, C) });
  const queuedAt = Date.now();
  store.gate = null;
  open();
  await sleep(20);
  t.equal(store.writes, 1, 'the write ended and the ten queued behind it were not sent at once (the store would see a statement per write time)');
  t.equal(store.usage.size, 1);
  while (store.usage.size < 11 && Date.now() - queuedAt < 1000) await sleep(5);
  t.equal(store.usage.size, 11, 'the ten were written together');
  t.equal(store.writes, 2);
  // Generous for a loaded machine's late timers: it checks that their own timer wrote them, not some later event.
  t.ok(Date.now() - queuedAt <= 150 + 200, `within flush_ms of when they came (${Date.now() - queuedAt} ms)`);
});

t.test('a journal behind billing.journal_max_lag_ms holds new reservations until the store catches up; settlements go on', async (t) => {
  const store = new FakeStore();
  store.addOrg(ORG, 100 * C);
  const { ledger } = makeLedger(store, { flushMs: 20, journalMaxLagMs: 150 });
  t.teardown(() => ledger.close());
  for (let i = 0; i < 3; i++) await ledger.reserve({ requestId: `b${i}`, orgId: ORG, funding: 'balance', amount: C, owner: 'w' });
  let open!: () => void;
  store.gate = new Promise((r) => (open = r));
  await ledger.settle({ usage: usage('b0', 10, C) });
  await sleep(250); // its write is held by the gate: the oldest row has waited longer than 150 ms
  await ledger.settle({ usage: usage('b1', 10, C) });
  t.pass('a settlement is taken while the journal is behind');
  let answered = false;
  const held = ledger.reserve({ requestId: 'late', orgId: ORG, funding: 'balance', amount: C, owner: 'w' }).then((r) => ((answered = true), r));
  await sleep(100);
  t.notOk(answered, 'a new reservation waits while the store is behind');
  t.equal(ledger.stats().storeWaits, 1);
  store.gate = null;
  open();
  t.same(await held, { ok: true }, 'and goes through once the write returns');
  t.equal(ledger.stats().storeRefusals, 0);
  t.same(await ledger.reserve({ requestId: 'next', orgId: ORG, funding: 'balance', amount: C, owner: 'w' }), { ok: true }, 'no wait once caught up');
  t.equal(ledger.stats().storeWaits, 1);
});

t.test('a journal that stays behind: the held reservation is refused after 2 s, and nothing of it is held', async (t) => {
  const store = new FakeStore();
  store.addOrg(ORG, 100 * C);
  const { ledger } = makeLedger(store, { flushMs: 20, journalMaxLagMs: 150 });
  t.teardown(() => ledger.close());
  await ledger.reserve({ requestId: 'c0', orgId: ORG, funding: 'balance', amount: C, owner: 'w' });
  let open!: () => void;
  store.gate = new Promise((r) => (open = r));
  await ledger.settle({ usage: usage('c0', 10, C) });
  await sleep(200);
  const started = Date.now();
  await t.rejects(ledger.reserve({ requestId: 'refused', orgId: ORG, funding: 'balance', amount: C, owner: 'w' }), /the store is \d+ ms behind/);
  t.ok(Date.now() - started >= 1900, `refused after waiting ~2 s (${Date.now() - started} ms)`);
  t.equal(ledger.stats().storeRefusals, 1);
  t.equal((await ledger.account(ORG))!.heldBalance, 0, 'the refused reservation holds nothing');
  store.gate = null;
  open();
  await sleep(100);
  t.same(await ledger.reserve({ requestId: 'after', orgId: ORG, funding: 'balance', amount: C, owner: 'w' }), { ok: true }, 'reservations go through once the store has caught up');
  t.equal(store.usage.size, 1, 'the settlement was written');
});

t.test('a repeat the memory has forgotten is checked against the store and never counted', async (t) => {
  const store = new FakeStore();
  store.addOrg(ORG, 10 * C);
  const clock = new FakeClock();
  const first = makeLedger(store, {}, clock);
  await first.ledger.reserve({ requestId: 'old', orgId: ORG, funding: 'balance', amount: C, owner: 'w' });
  await first.ledger.settle({ usage: usage('old', 500, C) });
  await first.ledger.close();
  // A new host (a restart): the same settlement arrives again, later.
  clock.advance(SETTLE_CHECK_AFTER_MS + 1);
  const { ledger } = makeLedger(store, {}, clock);
  t.teardown(() => ledger.close());
  await ledger.settle({ usage: usage('old', 500, C) });
  t.equal((await ledger.account(ORG))!.balance, 10 * C - 500, 'memory never counted the repeat');
  await ledger.sync();
  t.equal((await ledger.account(ORG))!.balance, 10 * C - 500);
  t.equal(store.orgs.get(ORG)!.balance, 10 * C - 500);
});

t.test('a young repeat nobody foresaw (the store already had it) is corrected by the write that finds it', async (t) => {
  const store = new FakeStore();
  store.addOrg(ORG, 10 * C);
  const first = makeLedger(store);
  await first.ledger.settle({ usage: usage('old', 500, C) });
  await first.ledger.close();
  const { ledger } = makeLedger(store);
  t.teardown(() => ledger.close());
  await ledger.settle({ usage: usage('old', 500, C) });
  await ledger.sync();
  t.equal((await ledger.account(ORG))!.balance, 10 * C - 500, 'memory re-read the row once the store refused the repeat');
});

t.test('store failures: retried after a lost connection, recognised after a lost answer, a bad row dropped alone', async (t) => {
  const store = new FakeStore();
  store.addOrg(ORG, 10 * C);
  const { ledger } = makeLedger(store, { flushMs: 5 });
  t.teardown(() => ledger.close());
  for (const id of ['c1', 'c2', 'c3', 'c4']) await ledger.reserve({ requestId: id, orgId: ORG, funding: 'balance', amount: C, owner: 'w' });
  store.failNext = 'connection';
  await ledger.settle({ usage: usage('c1', 100, C) });
  await sleep(250);
  t.ok(store.entries.has('charge:c1'), 'written on retry');
  store.failNext = 'lost-answer';
  await ledger.settle({ usage: usage('c2', 200, C) });
  await sleep(250);
  t.equal((await ledger.account(ORG))!.balance, 10 * C - 300, 'the retry recognised its own committed write: not undone');
  store.poison.add('c3');
  await ledger.settle({ usage: usage('c3', 300, C) });
  await ledger.settle({ usage: usage('c4', 400, C) });
  await sleep(100);
  t.notOk(store.usage.has('c3'), 'the malformed row was dropped');
  t.ok(store.usage.has('c4'), 'and did not hold back the others');
  t.equal((await ledger.account(ORG))!.balance, 10 * C - 300 - 400, 'its charge was undone in memory');
  t.equal(store.orgs.get(ORG)!.balance, 10 * C - 700, 'memory = store');
  t.equal(store.journalSum(ORG), -700);
});

t.test('reconcile: a change made behind the ledger reaches the running actor, unwritten charges kept', async (t) => {
  const store = new FakeStore();
  store.addOrg(ORG, 10 * C);
  const { ledger } = makeLedger(store, { flushMs: 10_000 });
  t.teardown(() => ledger.close());
  await ledger.reserve({ requestId: 'u', orgId: ORG, funding: 'balance', amount: C, owner: 'w' });
  await ledger.settle({ usage: usage('u', 250, C) }); // in memory, not yet written
  const row = store.orgs.get(ORG)!;
  row.balance += 5 * C; // e.g. `tollgate credit`, straight to the store
  row.quotaPerSecond = 2;
  await ledger.reconcile();
  const view = (await ledger.account(ORG))!;
  t.equal(view.balance, 15 * C - 250);
  t.equal(view.quotaPerSecond, 2);
  t.equal(view.quotaPerSecondIsDefault, false);
  await ledger.sync();
  t.equal(store.orgs.get(ORG)!.balance, 15 * C - 250);
});

t.test('quotas are admission: refused with Retry-After before any hold; unknown organizations refused', async (t) => {
  const store = new FakeStore();
  store.addOrg(ORG, 100 * C, { quotaPerSecond: 2 });
  const { ledger } = makeLedger(store);
  t.teardown(() => ledger.close());
  const r = await Promise.all([0, 1, 2].map((i) => ledger.reserve({ requestId: `q${i}`, orgId: ORG, funding: 'balance', amount: C, owner: 'w' })));
  t.same(r.map((x) => x.ok), [true, true, false]);
  t.match(r[2], { code: 'rate_limited', window: 'per_second', limit: 2, retryAfterSeconds: 1 });
  t.equal((await ledger.account(ORG))!.heldBalance, 2 * C);
  t.same(await ledger.reserve({ requestId: 'z', orgId: '22222222-2222-4222-8222-222222222222', funding: 'balance', amount: 1, owner: 'w' }), {
    ok: false,
    code: 'unknown_organization',
  });
  t.equal(await ledger.account('nope'), null);
});

t.test('issue 12 item 10: a credit past the money maximum is refused by the actor, or by the store when memory is stale', async (t) => {
  const MAX = Number.MAX_SAFE_INTEGER;
  const store = new FakeStore();
  store.addOrg(ORG, MAX - 5);
  const { ledger } = makeLedger(store);
  t.teardown(() => ledger.close());
  t.same(await ledger.credit({ orgId: ORG, key: 'k1', amount: 6, target: 'balance', expiresAt: null, note: null }), { ok: false, code: 'money_limit' });
  t.equal(store.entries.size, 0, 'nothing written');
  t.match(await ledger.credit({ orgId: ORG, key: 'k2', amount: 5, target: 'balance', expiresAt: null, note: null }), { ok: true, account: { balance: MAX } });
  t.same(await ledger.credit({ orgId: ORG, key: 'k3', amount: MAX, target: 'package', expiresAt: null, note: null }).then((r) => r.ok), true);
  t.same(await ledger.credit({ orgId: ORG, key: 'k4', amount: 1, target: 'package', expiresAt: null, note: null }), { ok: false, code: 'money_limit' });
  // The store's CHECK (migration 005) refuses what a stale memory allows: the same answer, and memory takes the store's row.
  const other = '22222222-2222-4222-8222-222222222222';
  store.addOrg(other, 10);
  await ledger.account(other);
  store.orgs.get(other)!.balance = MAX; // moved behind the actor's back (`tollgate credit`)
  store.writeCredit = async () => {
    throw Object.assign(new Error('new row for relation "organizations" violates check constraint'), { code: '23514' });
  };
  t.same(await ledger.credit({ orgId: other, key: 'k5', amount: 1, target: 'balance', expiresAt: null, note: null }), { ok: false, code: 'money_limit' });
  t.equal((await ledger.account(other))!.balance, MAX, 'reloaded from the store');
});
