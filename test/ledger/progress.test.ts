// Issue 17: output delivered before its worker died is billed. A stream's
// progress rides on its hold; when the hold's owner stops beating, the hold
// stays held one more lease (the owner may settle it itself), then is settled
// on the last progress as an 'interrupted' usage row. Without progress the
// hold is released for free, as before.
import t, { type Test } from 'tap';
import { decodeHold, encodeHold } from '../../src/ledger/redis/keys.js';
import { FakeStore } from './fake-store.js';
import { FakeClock, makeLedger, ORG, SETTINGS, usage } from './helpers.js';

const LEASE = SETTINGS.holdLeaseMs;

async function setup(t: Test) {
  const store = new FakeStore();
  store.addOrg(ORG, 10_000);
  const clock = new FakeClock();
  const { ledger } = makeLedger(store, { flushMs: 1 }, clock);
  t.teardown(() => ledger.close());
  for (const rid of ['s1', 's2']) t.same(await ledger.reserve({ requestId: rid, orgId: ORG, funding: 'balance', amount: 3000, owner: 'dead' }), { ok: true });
  const expired: string[] = [];
  ledger.onHoldExpired = (h) => expired.push(h.requestId);
  return { store, clock, ledger, expired };
}

t.test('a hold with progress is settled on it one lease after its owner went silent', async (t) => {
  const { store, clock, ledger, expired } = await setup(t);
  t.ok(ledger.progress({ usage: { ...usage('s1', 800, 3000), outcome: 'interrupted' } }), 'progress lands on the open hold');
  t.ok(ledger.progress({ usage: { ...usage('s1', 99_999, 3000), outcome: 'interrupted' } }), 'a later report replaces it');
  t.equal(ledger.progress({ usage: usage('nope', 1, 1) }), null, 'no hold, nothing kept');
  clock.advance(LEASE + 1);
  ledger.sweep();
  let v = (await ledger.account(ORG))!;
  t.same([v.heldBalance, v.openHolds], [3000, 1], 'lease out: s2 (no progress) released for free, s1 still held');
  clock.advance(LEASE);
  ledger.sweep();
  await new Promise((r) => setTimeout(r, 50));
  await ledger.sync();
  v = (await ledger.account(ORG))!;
  t.same([v.balance, v.heldBalance, v.openHolds], [7000, 0, 0], 'settled on its progress, capped at the hold');
  const row = store.usage.get('s1')!;
  t.same([row.outcome, row.chargedMicros], ['interrupted', 3000], 'an interrupted usage row for the delivered amount');
  t.equal(store.orgs.get(ORG)!.balance, 7000);
  t.same(expired.sort(), ['s1', 's2'], 'both holds leave the mirror');
  t.equal(ledger.stats().progressSettled, 1);
});

t.test('the owner settles within the grace: its own settlement wins', async (t) => {
  const { store, clock, ledger } = await setup(t);
  ledger.progress({ usage: { ...usage('s1', 800, 3000), outcome: 'interrupted' } });
  clock.advance(LEASE + 1);
  ledger.sweep();
  await ledger.settle({ usage: usage('s1', 1200, 3000) });
  clock.advance(LEASE);
  ledger.sweep();
  await ledger.sync();
  t.same([store.usage.get('s1')!.outcome, store.usage.get('s1')!.chargedMicros], ['completed', 1200]);
  t.equal(store.orgs.get(ORG)!.balance, 10_000 - 1200, 'charged once, by the real settlement');
  t.equal(ledger.stats().progressSettled, 0);
});

t.test('the hold mirror (Redis) carries the progress, bounded by the hold, so a takeover settles on it', async (t) => {
  const hold = { orgId: ORG, requestId: 's1', funding: 'balance' as const, amount: 3000, owner: 'i/1', createdAt: 5 };
  t.same(decodeHold('s1', encodeHold(hold)), hold, 'without progress: as before');
  const withProgress = { ...hold, progress: { ...usage('s1', 800, 3000), outcome: 'interrupted' } };
  t.same(decodeHold('s1', encodeHold(withProgress)), withProgress, 'with progress: round trip');
  const tooMuch = JSON.stringify([ORG, 'balance', 3000, 'i/1', 5, { ...usage('s1', 99_999, 3000), outcome: 'interrupted' }]);
  t.equal(decodeHold('s1', tooMuch)!.progress!.chargedMicros, 3000, 'a mirrored charge above the hold is cut to the hold');
  const otherRequest = JSON.stringify([ORG, 'balance', 3000, 'i/1', 5, usage('s2', 800, 3000)]);
  t.equal(decodeHold('s1', otherRequest)!.progress, undefined, 'progress of another request is ignored');
});
