// The worker's side of allotments (src/ledger/allotments.ts) on a fake clock:
// what it reserves locally and when it asks, admissions good for one second
// only and handed back, and what each retirement tells the actor. The
// actor's side and the two together over real IPC: allotments.test.ts.
import t from 'tap';
import { Allotments } from '../../src/ledger/allotments.js';
import type { AllotCommand, Allotted, ReserveRequest, RetiredCommand } from '../../src/ledger/protocol.js';

const T0 = 1_700_000_000_000; // a whole second

function setup(calls = 4): { a: Allotments; sent: RetiredCommand[]; at: (ms: number) => void } {
  let now = T0;
  const sent: RetiredCommand[] = [];
  const a = new Allotments('worker:1', calls, (cmd) => sent.push(cmd), () => now);
  t.teardown(() => a.close());
  return { a, sent, at: (ms) => (now = T0 + ms) };
}

let n = 0;
function req(amount = 100): ReserveRequest {
  return { requestId: `r${++n}`, orgId: 'org', funding: 'balance', amount };
}

t.test('a call is reserved locally only while money and admissions of this second are left', async (t) => {
  const { a, sent, at } = setup(4);
  const first = req();
  t.notOk(a.take(first), 'nothing granted yet: ask the actor');
  const want = a.want(first)!;
  t.match(want, { money: 400, slots: 4, refund: null }, 'asks for 4 calls of this size');
  t.equal(a.want(req()), undefined, 'one ask at a time');
  a.granted(want, { money: 250, slots: 3, second: T0 / 1000 });
  const local = [req(), req(), req()];
  t.same(local.map((r) => a.take(r)), [true, true, false], 'money for two more calls of 100 (250), though three admissions');
  t.same(a.taken(local[0].requestId), { id: want.id, amount: 100, startedAt: T0 }, 'what a local call took, and when');
  a.finish(local[0].requestId);
  t.equal(a.taken(local[0].requestId), null, 'finished: no longer in progress');
  at(1000);
  const next = req(10);
  t.notOk(a.take(next), 'a new second: last second\'s admission is no longer good');
  t.match(a.want(next), { id: want.id, money: 0, refund: { second: T0 / 1000, slots: 1 } }, 'it goes back with the next ask; money (50 for calls of 10) is enough');
  t.equal(sent.length, 0, 'no retirement yet');
});

t.test('retirement: idle, aged, recalled; calls in progress are named, unused admissions handed back', async (t) => {
  const { a, sent, at } = setup(4);
  const first = req();
  a.take(first);
  const want = a.want(first)!;
  a.granted(want, { money: 400, slots: 4, second: T0 / 1000 });
  const running = req();
  t.ok(a.take(running));
  a.recall(want.id);
  t.same(sent, [{ orgId: 'org', id: want.id, unused: { second: T0 / 1000, slots: 3 }, inFlight: [{ requestId: running.requestId, amount: 100, startedAt: T0 }] }], 'recalled: one call running, three admissions unused');
  t.notOk(a.take(req()), 'a retired allotment reserves nothing');
  a.recall(want.id);
  t.equal(sent.length, 1, 'a second recall of it sends nothing more');

  const again = req();
  const want2 = a.want(again)!;
  t.not(want2.id, want.id, 'a fresh allotment, a fresh id');
  a.granted(want2, { money: 400, slots: 4, second: T0 / 1000 });
  at(1500);
  (a as unknown as { sweep(): void }).sweep();
  t.equal(sent.length, 2, 'unused for a second: retired');
  t.equal(sent[1].id, want2.id);

  const late = req();
  const want3 = a.want(late)!;
  a.recall(want3.id); // retired while its ask is on its way
  t.equal(sent.at(-1)!.pendingAsk, want3.ask, 'its retirement names the ask on its way: the actor gives back what it grants it, admissions too');
  const count = sent.length;
  a.granted(want3, { money: 400, slots: 2, second: T0 / 1000 + 1 });
  t.equal(sent.length, count, 'the grant, when it comes back, sends nothing more');
});

t.test('an allotment never granted anything retires without a message; 0 calls means no allotments', async (t) => {
  const { a, sent, at } = setup(4);
  const r = req();
  const want = a.want(r)!;
  a.granted(want, undefined);
  at(2000);
  (a as unknown as { sweep(): void }).sweep();
  t.equal(sent.length, 0);
  const off = setup(0);
  t.equal(off.a.want(req()), undefined, 'billing.allotment_calls = 0: never asks');
});

t.test('issue 32: a top-up is asked once half is spent, and calls that find it dry wait for it instead of each asking the actor', async (t) => {
  let now = T0;
  const sent: RetiredCommand[] = [];
  const topUps: AllotCommand[] = [];
  let answer!: (a: Allotted | null) => void;
  const a = new Allotments('worker:1', 4, (cmd) => sent.push(cmd), () => now, (cmd) => {
    topUps.push(cmd);
    return new Promise((resolve) => (answer = resolve));
  });
  t.teardown(() => a.close());
  const first = req();
  const want = a.want(first)!;
  a.granted(want, { money: 400, slots: 4, second: T0 / 1000 });
  // At a slow pace (one call per 100 ms), the ask stays billing.allotment_calls' size.
  now += 100;
  t.ok(a.take(req()), 'one of four: no top-up yet');
  t.equal(topUps.length, 0);
  now += 100;
  t.ok(a.take(req()), 'two of four');
  now += 100;
  t.ok(a.take(req()), 'three of four: below half, a top-up is asked');
  t.equal(topUps.length, 1);
  t.match(topUps[0], { orgId: 'org', funding: 'balance', owner: 'worker:1', amount: 100, allot: { id: want.id, slots: 3, money: 300 } }, 'for what was spent');
  t.ok(a.take(req()), 'four of four, while the top-up is on its way: no second ask');
  t.equal(topUps.length, 1);
  // Dry now: a call waits for the top-up rather than asking the actor itself.
  let asked = 0;
  const waiting = a.reserve(req(), async () => {
    asked++;
    return { ok: true };
  });
  await new Promise((r) => setImmediate(r));
  t.equal(asked, 0, 'the dry call waits for the top-up');
  answer({ money: 300, slots: 3, second: T0 / 1000 });
  t.same(await waiting, { ok: true });
  t.equal(asked, 0, 'and is reserved from it: the actor was not asked per call');
  t.equal(sent.length, 0, 'nothing retired');
  // A fast pace (two more calls within 1 ms of the top-up's answer): the next top-up asks for 100 ms of them, at most 16 × allotment_calls.
  now += 1;
  t.ok(a.take(req()), 'below half again: a second top-up');
  t.equal(topUps.length, 2);
  t.equal(topUps[1].allot.slots, 64 - 1, 'sized by the pace, capped at 16 × 4 calls (less the one admission left)');
});

t.test('calls that waited for a grant they could not use (a second now past) wait for the next ask, not each for the actor; after a grant of nothing they go at once', async (t) => {
  let now = T0 + 900;
  let answer!: (a: Allotted | null) => void;
  const a = new Allotments('worker:1', 4, () => {}, () => now, () => new Promise((resolve) => (answer = resolve)));
  t.teardown(() => a.close());
  const want = a.want(req())!;
  a.granted(want, { money: 400, slots: 4, second: T0 / 1000 });
  for (let i = 0; i < 3; i++) t.ok(a.take(req()));
  t.ok(a.take(req()), 'the last of four; a top-up is on its way');
  const asks: { allot: boolean }[] = [];
  const pending: (() => void)[] = [];
  const grantNext = (): void => pending.splice(0).forEach((resolve) => resolve());
  const ask = (cmd: { allot?: unknown }) =>
    new Promise<{ ok: true; allotted?: Allotted }>((resolve) => {
      asks.push({ allot: cmd.allot !== undefined });
      pending.push(() => resolve({ ok: true, ...(cmd.allot ? { allotted: { money: 1000, slots: 8, second: T0 / 1000 + 1 } } : {}) }));
    });
  const waiting = [a.reserve(req(), ask), a.reserve(req(), ask), a.reserve(req(), ask)];
  await new Promise((r) => setImmediate(r));
  t.equal(asks.length, 0, 'three dry calls wait for the top-up');
  now = T0 + 1000; // the second turns while it is on its way
  answer({ money: 300, slots: 3, second: T0 / 1000 });
  await new Promise((r) => setImmediate(r));
  t.same(asks, [{ allot: true }], 'its admissions are for the second past: one call asks for a fresh grant, the other two wait for it');
  grantNext();
  await Promise.all(waiting);
  t.equal(asks.length, 1, 'and are reserved from it: the actor was asked once, not three times');

  // The actor grants nothing (an organization served call by call): the waiters then go at once, not one after another.
  const topUpBefore = answer;
  let left = 0;
  while (a.take(req())) left++;
  t.ok(left > 0 && answer !== topUpBefore, 'what was left of the fresh grant is taken; a top-up went out when half was spent');
  const before = asks.length;
  const dry = [a.reserve(req(), ask), a.reserve(req(), ask), a.reserve(req(), ask)];
  await new Promise((r) => setImmediate(r));
  answer(null);
  await new Promise((r) => setImmediate(r));
  t.same(asks.slice(before), [{ allot: true }, { allot: false }, { allot: false }], 'after a grant of nothing: one asks again, the others ask for themselves at once');
  grantNext();
  t.equal((await Promise.all(dry)).length, 3);
});
