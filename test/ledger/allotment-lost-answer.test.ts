// Issue 39, fault 2, at its root: a reservation that also asks for an
// allotment reaches the actor and is granted, but its worker has stopped
// waiting (after a Redis stall: its command timed out, the caller answered 503
// and released the call, naming only the call). Before the fix nothing retired
// that allotment: its money stayed held while the worker lived (the console
// showed `held` with no open hold), and a call for what the account had free
// was refused 402. Deterministic here: a real Ledger (fake store) behind an
// ask that applies the command and then fails as a timed-out ask does. The
// same fault through a real Redis stall: redis/stall-allotment.test.ts.
import t from 'tap';
import { Allotments } from '../../src/ledger/allotments.js';
import type { ReserveCommand, RetiredCommand } from '../../src/ledger/protocol.js';
import { FakeStore } from './fake-store.js';
import { makeLedger, ORG } from './helpers.js';

const BALANCE = 1_000_000;
const AMOUNT = 59;

t.test('an allotment granted to an ask nobody waited for goes back; no false 402; admissions refunded', async (t) => {
  const store = new FakeStore();
  store.addOrg(ORG, BALANCE);
  const { ledger, clock } = makeLedger(store, { quotaPerSecond: 1000, quotaPerMinute: 1000 });
  t.teardown(() => ledger.close());
  // Retirements reach the actor in order behind the worker's earlier commands, as the stream (or pipe) carries them.
  let delivery = Promise.resolve();
  const allot = new Allotments('worker:1', 32, (cmd: RetiredCommand) => (delivery = delivery.then(() => ledger.retired(cmd).then(() => {}))), clock.read);
  t.teardown(() => allot.close());

  // The ask reaches the actor (granted: the call's hold and an allotment), but the answer never comes back.
  const req = { requestId: 'stalled-1', orgId: ORG, funding: 'balance' as const, amount: AMOUNT };
  await t.rejects(
    allot.reserve(req, async (cmd: ReserveCommand) => {
      const reply = await ledger.reserve(cmd);
      t.ok(reply.ok && reply.allotted !== undefined, 'the actor granted the call and an allotment');
      throw new Error('ledger: no answer to reserve within 3000 ms');
    }),
  );
  // The caller answers 503 and releases the call (naming only the call: it was not reserved from an allotment).
  await ledger.release(allot.release({ requestId: req.requestId, orgId: ORG }));
  await delivery;

  t.equal(ledger.stats().allotments, 0, 'no allotment left open');
  const view = await ledger.account(ORG);
  t.same(view && { held: view.heldBalance, open: view.openHolds }, { held: 0, open: 0 }, 'nothing held');
  // No false 402: a call for the whole balance is admitted (before the fix: held money made it insufficient_funds).
  const all = await ledger.reserve({ requestId: 'all', orgId: ORG, funding: 'balance', amount: BALANCE, owner: 'worker:2' });
  t.ok(all.ok, `a call for the whole balance is admitted (${JSON.stringify(all)})`);
  await ledger.release({ requestId: 'all', orgId: ORG });
  // The lost grant's admissions went back too: the minute's quota (1000) admits 999 more calls besides the two made.
  let admitted = 0;
  for (let i = 0; i < 1000; i++) {
    const r = await ledger.reserve({ requestId: `q${i}`, orgId: ORG, funding: 'balance', amount: 1, owner: 'worker:2' });
    if (!r.ok) break;
    admitted++;
  }
  t.equal(admitted, 998, 'the quota counts only the calls made (the stalled one, the whole-balance one, these)');
});
