// The actor's side of allotments (src/ledger/actor-allotments.ts) against the
// in-memory store: what a grant gives. The two sides together over real IPC:
// allotments.test.ts.
import t from 'tap';
import { FakeStore } from './fake-store.js';
import { makeLedger, ORG } from './helpers.js';

const OWNER = 'worker:1';

t.test('a top-up that wants less money than one call (the worker holds nearly enough) gets it, and the admissions it came for', async (t) => {
  const store = new FakeStore();
  store.addOrg(ORG, 1_000_000);
  const { ledger } = makeLedger(store);
  t.teardown(() => ledger.close());
  const first = await ledger.reserve({ requestId: 'first', orgId: ORG, funding: 'balance', amount: 1000, owner: OWNER, allot: { id: 'a1', money: 32_000, slots: 32, refund: null, ask: 1 } });
  t.match(first, { ok: true, allotted: { money: 32_000, slots: 32 } }, 'the first grant');
  const topUp = await ledger.allot({ orgId: ORG, funding: 'balance', owner: OWNER, amount: 1000, allot: { id: 'a1', money: 5, slots: 16, refund: null, ask: 2 } });
  t.match(topUp, { money: 5, slots: 16 }, 'all 5 µ wanted, with the 16 admissions');
  const more = await ledger.allot({ orgId: ORG, funding: 'balance', owner: OWNER, amount: 1000, allot: { id: 'a1', money: 200_000, slots: 16, refund: null, ask: 3 } });
  t.match(more, { money: Math.floor((1_000_000 - 1000 - 32_005) / 8) }, 'a top-up that wants more than is free gets an eighth of what is');
  t.equal(ledger.stats().heldMicros, 1000 + 32_005 + Math.floor((1_000_000 - 1000 - 32_005) / 8), 'each grant is held');
});
