// The worker's side of allotments (src/ledger/allotments.ts) on a fake clock:
// what it reserves locally and when it asks, admissions good for one second
// only and handed back, and what each retirement tells the actor. The
// actor's side and the two together over real IPC: allotments.test.ts.
import t from 'tap';
import { Allotments } from '../../src/ledger/allotments.js';
import type { ReserveRequest, RetiredCommand } from '../../src/ledger/protocol.js';

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
  a.granted(want3, { money: 400, slots: 2, second: T0 / 1000 + 1 });
  t.same(sent.at(-1)!.unused.slots, 2, 'a grant that comes back to a retired allotment gives its admissions back');
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
