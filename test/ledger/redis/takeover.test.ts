// What a shard's next owner does with the Ledger, without Redis: adopt the
// holds its predecessor mirrored, apply again what the predecessor never
// acknowledged, and end with memory and store agreeing: nothing charged twice,
// nothing lost, a dead owner's holds released one lease after adoption.
import t from 'tap';
import type { HoldRecord } from '../../../src/ledger/records.js';
import { decodeHold, encodeHold } from '../../../src/ledger/redis/keys.js';
import { FakeStore } from '../fake-store.js';
import { FakeClock, makeLedger, ORG, SETTINGS, sleep, usage } from '../helpers.js';

const reserve = (requestId: string, amount: number, owner = 'inst-a/1') => ({ requestId, orgId: ORG, funding: 'balance' as const, amount, owner });

t.test('adopted holds count; a settlement applied by both owners is charged once', async (t) => {
  const store = new FakeStore();
  store.addOrg(ORG, 10_000);
  const clock = new FakeClock();
  const { ledger: a } = makeLedger(store, {}, clock);
  t.same(await a.reserve(reserve('r1', 3000)), { ok: true });
  t.same(await a.reserve(reserve('r2', 3000)), { ok: true });
  t.same(await a.reserve(reserve('r3', 3000)), { ok: true });
  // r1 settles at A and is written; r2 settles at A, which dies before writing it.
  await a.settle({ usage: usage('r1', 1000, 3000) });
  t.ok(a.written('r1'), 'a settlement is tracked until written');
  await a.sync();
  t.equal(a.written('r1'), undefined, 'and no longer once written');
  store.gate = new Promise(() => {}); // A's next write never lands
  await a.settle({ usage: usage('r2', 2000, 3000) });
  const mirrored: HoldRecord[] = [...a.openHolds(), { orgId: ORG, requestId: 'r2', funding: 'balance', amount: 3000, owner: 'inst-a/1', createdAt: clock.now }];
  t.equal(a.openHolds().length, 1, 'A holds only r3 now');

  store.gate = null;
  const { ledger: b } = makeLedger(store, {}, clock);
  t.equal(await b.adopt(mirrored), 2, 'B adopts r3 and the unacknowledged r2');
  t.equal(await b.adopt(mirrored), 0, 'adopting again changes nothing');
  let view = (await b.account(ORG))!;
  t.same([view.balance, view.heldBalance], [9000, 6000], 'store balance, both holds held');
  await b.settle({ usage: usage('r2', 2000, 3000) }); // claimed from the stream, applied again
  await b.sync();
  view = (await b.account(ORG))!;
  t.same([view.balance, view.heldBalance], [7000, 3000]);
  t.equal(store.orgs.get(ORG)!.balance, 7000, 'charged once in the store');
  t.equal(store.journalSum(ORG), 7000 - 10_000, 'the journal agrees');
  t.notOk(store.usage.get('r2')!.holdExpired, 'settled against its adopted hold');
  await a.close();
  await b.close();
});

t.test('the holds of an owner that stopped beating go one lease after adoption, and are reported', async (t) => {
  const store = new FakeStore();
  store.addOrg(ORG, 10_000);
  const clock = new FakeClock();
  const { ledger } = makeLedger(store, {}, clock);
  const expired: string[] = [];
  ledger.onHoldExpired = (h) => expired.push(h.requestId);
  await ledger.adopt([{ orgId: ORG, requestId: 'dead', funding: 'balance', amount: 4000, owner: 'gone/7', createdAt: clock.now }]);
  t.equal((await ledger.account(ORG))!.heldBalance, 4000);
  clock.advance(SETTINGS.holdLeaseMs - 1);
  ledger.sweep();
  t.same(expired, [], 'not before the lease');
  clock.advance(2);
  ledger.sweep();
  t.same(expired, ['dead'], 'released and reported (the host drops it from the mirror)');
  t.equal((await ledger.account(ORG))!.heldBalance, 0);
  await sleep(0);
  await ledger.close();
});

t.test('an allotment mirrored at its grant: the next owner adopts it held for at least what it still holds, settles its calls from it, and frees the rest at its retirement', async (t) => {
  const store = new FakeStore();
  store.addOrg(ORG, 1_000_000);
  const clock = new FakeClock();
  const { ledger: a } = makeLedger(store, {}, clock);
  const id = 'inst-a/1/a1';
  const reply = await a.reserve({ ...reserve('r1', 1000), allot: { id, money: 100_000, slots: 32, refund: null } });
  t.ok(reply.ok && reply.allotted !== undefined, 'the reservation carried a grant');
  const granted = reply.ok ? reply.allotted!.money : 0;
  // What the shard's owner mirrors at the grant (shard.ts), read back as the next owner reads it.
  const mirrored = a.openHolds().map((h) => decodeHold(h.requestId, encodeHold(h))!);
  t.same(
    mirrored.map((h) => [h.requestId, h.amount, h.allotment === true]),
    [
      ['r1', 1000, false],
      [id, granted, true],
    ],
    'the call\'s hold and the allotment, marked as one',
  );
  // Two calls the worker reserved from the allotment settle at A: x1 is written, x2 is not when A dies (never acknowledged).
  await a.settle({ usage: usage('x1', 300, 1000), allotment: id });
  await a.sync();
  store.gate = new Promise(() => {});
  await a.settle({ usage: usage('x2', 300, 1000), allotment: id });
  const heldAtA = (await a.account(ORG))!.heldBalance;
  t.equal(heldAtA, 1000 + granted - 2000, 'A holds the allotment less what its calls took');

  store.gate = null;
  const { ledger: b } = makeLedger(store, {}, clock);
  t.equal(await b.adopt(mirrored), 2, 'B adopts the call\'s hold and the allotment');
  t.equal(b.stats().allotments, 1, 'counted as an allotment, not as a call\'s hold');
  await b.settle({ usage: usage('x2', 300, 1000), allotment: id, check: true }); // claimed from the stream, applied again
  t.ok((await b.account(ORG))!.heldBalance >= heldAtA, 'B holds at least what A held: never less money held than the calls in progress took');
  await b.settle({ usage: usage('x3', 300, 1000), allotment: id });
  // Its worker retires it with x4 still in progress: x4 becomes a hold of its own, the rest of the allotment is free.
  const carved = await b.retired({ orgId: ORG, id, unused: { second: 0, slots: 0 }, inFlight: [{ requestId: 'x4', amount: 1000, startedAt: clock.now }] });
  t.same(
    carved.map((h) => [h.requestId, h.amount, h.carved === true]),
    [['x4', 1000, true]],
    'the call in progress is carved from it (the host mirrors it)',
  );
  await b.sync();
  const view = (await b.account(ORG))!;
  t.same([view.heldBalance, b.stats().allotments], [2000, 0], 'held: r1 and x4 only');
  t.equal(view.balance, 1_000_000 - 900, 'x1, x2 and x3 charged once each');
  t.equal(store.orgs.get(ORG)!.balance, 1_000_000 - 900, 'in the store too');
  t.equal(store.journalSum(ORG), -900, 'and in the journal');
  t.notOk(store.usage.get('x3')!.holdExpired, 'x3 was paid from the adopted allotment, not as a hold gone');
  await b.close();
  await a.close().catch(() => {});
});

t.test('an allotment whose owner stopped beating is voided and dropped from the mirror like a hold, without counting as an expired hold', async (t) => {
  const store = new FakeStore();
  store.addOrg(ORG, 1_000_000);
  const clock = new FakeClock();
  const { ledger } = makeLedger(store, {}, clock);
  const dropped: string[] = [];
  ledger.onHoldExpired = (h) => dropped.push(h.requestId);
  const id = 'gone/7/a1';
  const reply = await ledger.reserve({ ...reserve('c1', 1000, 'gone/7'), allot: { id, money: 100_000, slots: 8, refund: null } });
  t.ok(reply.ok && reply.allotted !== undefined, 'granted');
  await ledger.settle({ usage: usage('c1', 300, 1000) });
  t.ok((await ledger.account(ORG))!.heldBalance > 0, 'the allotment holds money');
  clock.advance(SETTINGS.holdLeaseMs + 1);
  ledger.sweep();
  t.same(dropped, [id], 'reported, so the Redis host drops it from the mirror (a next owner would adopt it again)');
  t.same([ledger.stats().allotments, ledger.stats().expiredHolds], [0, 0], 'gone, and not counted as a call\'s expired hold');
  await ledger.sync();
  await ledger.close();
});
