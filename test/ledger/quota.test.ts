// Request quotas on a fake clock: per-second and sliding per-minute limits,
// exact Retry-After, refusals not counted.
import t from 'tap';
import { RequestQuota } from '../../src/ledger/quota.js';

const T0 = 1_700_000_000_000; // a whole second

t.test('per second: the limit within one wall-clock second, Retry-After to the next', async (t) => {
  const q = new RequestQuota(3, 1000);
  for (let i = 0; i < 3; i++) t.equal(q.admit(T0 + 100 + i), null);
  const r = q.admit(T0 + 200);
  t.same(r, { window: 'per_second', limit: 3, retryAfterSeconds: 1 });
  t.equal(q.admit(T0 + 999)?.window, 'per_second', 'still refused in the same second');
  t.equal(q.admit(T0 + 1000), null, 'admitted at the next second');
});

t.test('per minute: sliding over the last 60 seconds; Retry-After is when the oldest seconds leave', async (t) => {
  const q = new RequestQuota(100, 10);
  // 4 at second 0, 3 at second 10, 3 at second 30: 10 in the window.
  for (let i = 0; i < 4; i++) t.equal(q.admit(T0 + i), null);
  for (let i = 0; i < 3; i++) t.equal(q.admit(T0 + 10_000 + i), null);
  for (let i = 0; i < 3; i++) t.equal(q.admit(T0 + 30_000 + i), null);
  // At second 45.5: full. The 4 of second 0 leave when second 60 begins: 14.5 s → 15.
  const r = q.admit(T0 + 45_500);
  t.same(r, { window: 'per_minute', limit: 10, retryAfterSeconds: 15 });
  t.not(q.admit(T0 + 59_999), null, 'still full just before second 60');
  t.equal(q.admit(T0 + 60_000), null, 'admitted when second 0 left the window');
  t.equal(q.inWindow(Math.floor((T0 + 60_000) / 1000)), 7);
});

t.test('per minute: Retry-After walks past seconds until the count falls below the limit', async (t) => {
  const q = new RequestQuota(100, 5);
  t.equal(q.admit(T0), null); // second 0: 1
  for (let i = 0; i < 4; i++) t.equal(q.admit(T0 + 5000 + i), null); // second 5: 4
  // Dropping second 0 leaves 4 < 5: retry at second 60 from 20.0 → 40 s.
  t.same(q.admit(T0 + 20_000), { window: 'per_minute', limit: 5, retryAfterSeconds: 40 });
  const q2 = new RequestQuota(100, 5);
  for (let i = 0; i < 5; i++) t.equal(q2.admit(T0 + 5000 + i), null); // all five in second 5
  t.same(q2.admit(T0 + 20_000), { window: 'per_minute', limit: 5, retryAfterSeconds: 45 });
});

t.test('refusals do not count; both limits: the longer wait is given', async (t) => {
  const q = new RequestQuota(2, 3);
  t.equal(q.admit(T0), null);
  t.equal(q.admit(T0 + 1), null);
  for (let i = 0; i < 10; i++) t.equal(q.admit(T0 + 2 + i)?.window, 'per_second');
  t.equal(q.admit(T0 + 1000), null, 'third admission in the minute');
  const r = q.admit(T0 + 1500)!;
  t.equal(r.window, 'per_minute');
  t.equal(r.retryAfterSeconds, 59, 'until second 0 leaves: 58.5 → 59');
  t.equal(q.inWindow(Math.floor((T0 + 1500) / 1000)), 3);
});

t.test('a whole minute later the window is empty again', async (t) => {
  const q = new RequestQuota(1, 1);
  t.equal(q.admit(T0), null);
  t.not(q.admit(T0 + 30_000), null);
  t.equal(q.admit(T0 + 60_000), null);
  t.equal(q.admit(T0 + 3_600_000), null, 'an hour later, slots from long ago count nothing');
});

t.test('allotments: admissions granted in advance are a share of what is left, and unused ones leave both windows', async (t) => {
  const q = new RequestQuota(40, 100);
  t.equal(q.admitMany(T0 + 10, 32, 1 / 8), 5, 'an eighth of the 40 left this second');
  t.equal(q.admitMany(T0 + 20, 2, 1 / 8), 2, 'never more than asked');
  for (let i = 0; i < 33; i++) t.equal(q.admit(T0 + 30 + i), null);
  t.equal(q.admit(T0 + 100)?.window, 'per_second', 'the granted admissions count: 7 + 33 = 40');
  t.equal(q.admitMany(T0 + 110, 32, 1 / 8), 0, 'nothing left to grant');
  q.refund(Math.floor(T0 / 1000), 3);
  t.equal(q.admit(T0 + 120), null, 'three unused ones given back: admitted again');
  t.equal(q.inWindow(Math.floor(T0 / 1000)), 38);
  q.refund(Math.floor(T0 / 1000) - 61, 5);
  t.equal(q.inWindow(Math.floor(T0 / 1000)), 38, 'a refund for a second no longer counted changes nothing');
  t.equal(q.admitMany(T0 + 1000, 1000, 1 / 8), 5, 'the next second: an eighth of the smaller of what each window has left (40 this second, 62 this minute)');
  const tight = new RequestQuota(1000, 20);
  t.equal(tight.admitMany(T0, 1000, 1 / 8), 2, 'and of the minute when it has less left (20)');
});

t.test('a key\'s own quota in its organization\'s actor: the key\'s window first, then the organization\'s; a refusal counts in neither', async (t) => {
  const { OrgActor } = await import('../../src/ledger/actor.js');
  const actor = new OrgActor('org', { balance: 1_000_000, package: 0, packageExpiresAt: null, quotaPerSecond: null, quotaPerMinute: 5 }, { perSecond: 1000, perMinute: 1000 });
  let n = 0;
  const reserve = (keyId: string | null, at: number) =>
    actor.reserve({ requestId: `r${++n}`, orgId: 'org', funding: 'balance', amount: 1, owner: 'w', ...(keyId === null ? {} : { keyQuota: { keyId, perMinute: 2 } }) }, at);
  t.same([reserve('a', T0), reserve('a', T0 + 1)].map((r) => r.ok), [true, true]);
  const byKey = reserve('a', T0 + 2);
  t.match(byKey, { ok: false, code: 'rate_limited', scope: 'key', window: 'per_minute', limit: 2, retryAfterSeconds: 60 });
  // The key's refusal did not count in the organization's window: 3 more of the organization's 5 fit.
  t.same([reserve(null, T0 + 3), reserve('b', T0 + 30_000), reserve(null, T0 + 30_001)].map((r) => r.ok), [true, true, true]);
  // The organization's window is full: key b's call is refused there and given back to b's window ...
  const byOrg = reserve('b', T0 + 30_002);
  t.match(byOrg, { ok: false, code: 'rate_limited', window: 'per_minute', limit: 5 });
  t.equal((byOrg as { scope?: string }).scope, undefined, 'the organization\'s refusal is not the key\'s');
  // ... so once second T0 has left the organization's minute, b has 1 of its 2 left (its call at T0+30 s), not 0.
  t.equal(reserve('b', T0 + 60_000).ok, true, 'b\'s call refused by the organization did not count in b\'s window');
  t.match(reserve('b', T0 + 60_001), { ok: false, scope: 'key' }, 'and then b\'s 2 are used');
  t.equal(actor.keyQuotas.size, 2);
  reserve(null, T0 + 200_000);
  reserve('c', T0 + 200_001);
  t.equal(actor.keyQuotas.size, 1, 'idle keys\' windows are dropped');
});
