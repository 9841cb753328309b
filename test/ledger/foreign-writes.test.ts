// Issue 17: a charge stored by another writer (a worker that wrote its
// settlement directly while Redis was away, a shard's previous owner) and the
// same settlement reaching the actor, in every order. The actor's balance is
// checked after every step, not only once a reconcile has run: counted once,
// never twice, never missing.
import t, { type Test } from 'tap';
import { SETTLE_CHECK_AFTER_MS } from '../../src/ledger/ledger.js';
import { FakeStore } from './fake-store.js';
import { FakeClock, makeLedger, ORG, usage } from './helpers.js';

const START = 10_000;
const HOLD = 3000;
const CHARGE = 1000;

async function setup(t: Test) {
  const store = new FakeStore();
  store.addOrg(ORG, START);
  const clock = new FakeClock();
  // Writes only when a test asks (sync): each order below is set up by hand.
  const { ledger } = makeLedger(store, { flushMs: 60_000 }, clock);
  t.teardown(() => ledger.close());
  t.same(await ledger.reserve({ requestId: 'r1', orgId: ORG, funding: 'balance', amount: HOLD, owner: 'w' }), { ok: true });
  const u = usage('r1', CHARGE, HOLD);
  /** The worker's direct write: the journal's own statement, another writer tag. */
  const direct = (): Promise<unknown> => store.writeBatch([{ usage: { ...u }, writer: 'direct:w' }]);
  const view = async (): Promise<[number, number]> => {
    const v = (await ledger.account(ORG))!;
    return [v.balance, v.heldBalance];
  };
  return { store, clock, ledger, u, direct, view };
}

t.test('stored directly, loaded, then the late settlement arrives: counted once at every step', async (t) => {
  const { store, clock, ledger, u, direct, view } = await setup(t);
  await direct();
  await ledger.refresh(ORG);
  t.same(await view(), [START - CHARGE, HOLD], 'the load counts the direct charge; the hold is still open');
  clock.advance(SETTLE_CHECK_AFTER_MS + 1);
  await ledger.settle({ usage: { ...u } });
  t.same(await view(), [START - CHARGE, 0], 'the late settlement closes the hold and charges nothing more');
  await ledger.sync();
  t.same(await view(), [START - CHARGE, 0]);
  t.equal(store.orgs.get(ORG)!.balance, START - CHARGE);
});

t.test('a claimed settlement (check) is checked however young', async (t) => {
  const { ledger, u, direct, view } = await setup(t);
  await direct();
  await ledger.refresh(ORG);
  await ledger.settle({ usage: { ...u }, check: true });
  t.same(await view(), [START - CHARGE, 0]);
});

t.test('applied first, stored directly before the actor writes it: the charge stays counted', async (t) => {
  const { store, ledger, u, direct, view } = await setup(t);
  await ledger.settle({ usage: { ...u } });
  t.same(await view(), [START - CHARGE, 0], 'applied in memory');
  await direct();
  t.same(await view(), [START - CHARGE, 0]);
  await ledger.sync();
  t.same(await view(), [START - CHARGE, 0], 'the store refused our write as a repeat; memory still counts the charge once');
  t.equal(store.orgs.get(ORG)!.balance, START - CHARGE);
});

t.test('applied first, stored directly, a reconcile before the actor writes it: absorbed, not doubled', async (t) => {
  const { store, ledger, u, direct, view } = await setup(t);
  await ledger.settle({ usage: { ...u } });
  await direct();
  await ledger.reconcile();
  t.same(await view(), [START - CHARGE, 0], 'the reconcile finds the pending charge journaled and counts it once');
  await ledger.sync();
  t.same(await view(), [START - CHARGE, 0], 'and our refused write changes nothing');
  t.equal(store.orgs.get(ORG)!.balance, START - CHARGE);
});
