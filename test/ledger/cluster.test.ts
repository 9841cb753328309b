// Billing through real processes: a cluster primary hosting the ledger actors
// and forked workers calling Billing over real cluster IPC (see
// test/fixtures/ledger-harness.ts). The concurrency invariant on real
// PostgreSQL and on the embedded one, idempotent settlement, kill -9 of a
// worker with holds open, and the request quotas.
import { randomUUID } from 'node:crypto';
import t, { type Test } from 'tap';
import { boundCost } from '../../src/billing/pricing.js';
import type { Hold } from '../../src/billing/types.js';
import type { Price } from '../../src/catalog/types.js';
import { testDatabase } from '../helpers/services.js';
import { books, settleOnBoth, startHarness, type ReserveArgs, type ReserveResult } from './harness.js';
import { secondBegun } from '../helpers/clock.js';

const PRICE: Price = { inputPerMtok: 2_500_000, cachedInputPerMtok: 1_250_000, outputPerMtok: 10_000_000, imageUnit: 0 };
const MODEL = { modelId: randomUUID(), price: PRICE };
const BOUND = { inputTokens: 1200, outputTokens: 32768, imageUnits: 0 };
const C = boundCost(PRICE, BOUND);

function reserveArgs(orgId: string, prefix: string, n: number, keyId = randomUUID()): ReserveArgs[] {
  return Array.from({ length: n }, (_, i) => ({
    requestId: `req_${prefix}_${i}`,
    key: { id: keyId, orgId, funding: 'balance' as const },
    model: MODEL,
    surface: 'chat_completions' as const,
    bound: BOUND,
  }));
}

async function concurrency(t: Test, store: string, flushMs: string): Promise<void> {
  const h = await startHarness(t, { store, workers: 2, env: { BILLING_FLUSH_MS: flushMs } });
  const K = 13;
  const credits = K * C;
  const orgId = await h.call<string>('createOrg', { id: randomUUID(), balance: credits });
  // Watch the organization while the 50 reservations race: available must never go below zero.
  let watching = true;
  const samples: number[] = [];
  const watcher = (async () => {
    while (watching) {
      const a = await h.worker<{ balance: number; heldBalance: number }>(0, 'account', { orgId });
      samples.push(a.balance - a.heldBalance);
    }
  })();
  const [a, b] = await Promise.all([
    h.worker<ReserveResult[]>(0, 'reserveMany', { list: reserveArgs(orgId, 'a', 25) }),
    h.worker<ReserveResult[]>(1, 'reserveMany', { list: reserveArgs(orgId, 'b', 25) }),
  ]);
  const all = [...a, ...b];
  const admitted = all.filter((r): r is { ok: true; hold: Hold } => r.ok);
  const refused = all.filter((r) => !r.ok);
  t.equal(admitted.length, K, `exactly K=${K} of 50 admitted`);
  t.equal(refused.length, 50 - K);
  t.ok(
    refused.every((r) => !r.ok && r.code === 'insufficient_funds' && r.status === 402),
    'the rest refused with insufficient_funds (402)',
  );
  t.match(refused[0], { limit: { kind: 'funds', funding: 'balance', available: '0.00' } });
  t.ok(admitted.every((r) => r.hold.reserved === C));
  // Settle: each call consumed some random part of its bound; settled from either worker.
  const settles = admitted.map((r, i) => ({
    hold: r.hold,
    metered: { inputTokens: 300 + i * 37, cachedInputTokens: i * 11, cacheWriteTokens: 0, outputTokens: 100 + i * 997, imageUnits: 0, source: 'supplier' },
  }));
  await settleOnBoth(h, settles);
  watching = false;
  await watcher;
  t.ok(samples.length > 0 && samples.every((s) => s >= 0), `available never below zero in ${samples.length} samples`);
  const money = await books(h, orgId);
  t.equal(money.rows, K, 'one usage row per admitted call');
  t.ok(money.charged > 0 && money.charged < credits);
  t.equal(money.balance, credits - money.charged, 'balance = credits − sum(charged in usage rows), to the micro');
  t.equal(money.journal, money.balance, 'and = the sum of its journal');
  const view = await h.worker<{ balance: number; heldBalance: number; openHolds: number }>(1, 'account', { orgId });
  t.same([view.balance, view.heldBalance, view.openHolds], [money.balance, 0, 0], 'the actor agrees with the store');

  // Idempotency: the same settlement again, from both workers at once, charges nothing more.
  await Promise.all([h.worker(0, 'settle', settles[0]), h.worker(1, 'settle', settles[0]), h.worker(1, 'settle', settles[3])]);
  const again = await books(h, orgId);
  t.same(again, money, 'repeated settlements changed nothing');
}

t.test('50 concurrent calls, K funded: real PostgreSQL (flush_ms 100)', async (t) => {
  const url = await testDatabase(t);
  if (url !== null) await concurrency(t, url, '100');
});

t.test('50 concurrent calls, K funded: real PostgreSQL (flush_ms 0)', async (t) => {
  const url = await testDatabase(t);
  if (url !== null) await concurrency(t, url, '0');
});

t.test('50 concurrent calls, K funded: embedded PostgreSQL', async (t) => {
  await concurrency(t, 'embedded', '100');
});

t.test('kill -9 of a worker with holds open: released at once, spendable again, the other worker serving', async (t) => {
  // A long lease: the release must come from the primary seeing the worker's IPC channel close (Ledger.ownerGone), not from the lease.
  const lease = 5000;
  const h = await startHarness(t, { store: 'embedded', workers: 2, env: { HOLD_LEASE_MS: String(lease) } });
  const K = 4;
  const orgId = await h.call<string>('createOrg', { id: randomUUID(), balance: K * C + 10 * 1000 });
  const held = await h.worker<ReserveResult[]>(0, 'reserveMany', { list: reserveArgs(orgId, 'doomed', K) });
  t.equal(held.filter((r) => r.ok).length, K);
  t.equal((await h.worker<ReserveResult>(1, 'reserve', reserveArgs(orgId, 'early', 1)[0])).ok, false, 'while the worker lives, its holds hold the money');
  await h.call('kill', { index: 0 });
  const killedAt = Date.now();
  let view = await h.worker<{ heldBalance: number; openHolds: number }>(1, 'account', { orgId });
  while (view.openHolds > 0 && Date.now() - killedAt < lease * 2) {
    await new Promise((r) => setTimeout(r, 20));
    view = await h.worker(1, 'account', { orgId });
  }
  const releasedAfter = Date.now() - killedAt;
  t.equal(view.openHolds, 0, `the dead worker's holds were released (${releasedAfter} ms after the kill)`);
  t.ok(releasedAfter < lease, `long before its lease (${lease} ms) ran out`);
  // The surviving worker serves a small call, and the released money is spendable again.
  const small = { ...reserveArgs(orgId, 'small', 1)[0], bound: { inputTokens: 100, outputTokens: 0, imageUnits: 0 } };
  const r = await h.worker<ReserveResult>(1, 'reserve', small);
  t.ok(r.ok, 'the other worker serves');
  if (r.ok) await h.worker(1, 'settle', { hold: r.hold, metered: { inputTokens: 50, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 0, imageUnits: 0, source: 'supplier' } });
  const again = await h.worker<ReserveResult[]>(1, 'reserveMany', { list: reserveArgs(orgId, 'again', K) });
  t.equal(again.filter((r) => r.ok).length, K, 'the released money is spendable again');
  const stats = await h.call<{ expiredHolds: number }>('stats');
  t.equal(stats.expiredHolds, K);
});

t.test('quotas: per second and per minute, 429 with Retry-After; refusals take no hold', async (t) => {
  const h = await startHarness(t, { store: 'embedded', workers: 2 });
  const orgId = await h.call<string>('createOrg', { id: randomUUID(), balance: 100 * C, quotaPerSecond: 5, quotaPerMinute: 8 });
  await h.worker(0, 'account', { orgId }); // activate before the clock-aligned burst
  // Start the burst just after a second begins, so it lands inside one wall-clock second.
  while (Date.now() % 1000 > 20) await new Promise((r) => setTimeout(r, 1));
  const [a, b] = await Promise.all([
    h.worker<ReserveResult[]>(0, 'reserveMany', { list: reserveArgs(orgId, 'qa', 4) }),
    h.worker<ReserveResult[]>(1, 'reserveMany', { list: reserveArgs(orgId, 'qb', 3) }),
  ]);
  const first = [...a, ...b];
  t.equal(first.filter((r) => r.ok).length, 5, '5 per second admitted');
  const limited = first.filter((r) => !r.ok);
  t.equal(limited.length, 2);
  t.ok(limited.every((r) => !r.ok && r.code === 'rate_limited' && r.status === 429 && r.retryAfterSeconds === 1), '429, Retry-After: 1');
  t.match(limited[0], { limit: { kind: 'request_quota', window: 'per_second', limit: 5 } });
  const view = await h.worker<{ heldBalance: number }>(0, 'account', { orgId });
  t.equal(view.heldBalance, 5 * C, 'refused calls hold nothing');
  // Next second: the minute allows 3 more.
  await secondBegun(10);
  const second = await h.worker<ReserveResult[]>(1, 'reserveMany', { list: reserveArgs(orgId, 'qc', 5) });
  t.equal(second.filter((r) => r.ok).length, 3, 'the minute admits 8 in all');
  const byMinute = second.filter((r) => !r.ok);
  t.ok(
    byMinute.every((r) => !r.ok && r.code === 'rate_limited' && r.retryAfterSeconds! >= 57 && r.retryAfterSeconds! <= 59),
    `per minute: Retry-After ${byMinute.map((r) => (r.ok ? '' : r.retryAfterSeconds)).join(',')} s, until the first second leaves the window`,
  );
  t.match(byMinute[0], { limit: { kind: 'request_quota', window: 'per_minute', limit: 8 } });
});
