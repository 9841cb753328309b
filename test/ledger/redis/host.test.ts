// Billing through the Redis-streams ledger host in real processes: a cluster
// primary owning the shards and forked workers whose Billing sends commands
// over Redis (test/fixtures/ledger-harness.ts with REDIS_URL set). The same
// guarantees as the embedded host: exactly K of 50 admitted, idempotent
// settlement, a dead worker's holds released after its lease, quotas.
import { randomUUID } from 'node:crypto';
import t, { type Test } from 'tap';
import { boundCost } from '../../../src/billing/pricing.js';
import type { Hold } from '../../../src/billing/types.js';
import type { Price } from '../../../src/catalog/types.js';
import { books, settleOnBoth, startRedisHarness, type Harness, type ReserveArgs, type ReserveResult } from '../harness.js';

const PRICE: Price = { inputPerMtok: 2_500_000, cachedInputPerMtok: 1_250_000, outputPerMtok: 10_000_000, imageUnit: 0 };
const MODEL = { modelId: randomUUID(), price: PRICE };
const BOUND = { inputTokens: 1200, outputTokens: 32768, imageUnits: 0 };
const C = boundCost(PRICE, BOUND);

function reserveArgs(orgId: string, prefix: string, n: number): ReserveArgs[] {
  const keyId = randomUUID();
  return Array.from({ length: n }, (_, i) => ({
    requestId: `req_${prefix}_${i}`,
    key: { id: keyId, orgId, funding: 'balance' as const },
    model: MODEL,
    surface: 'chat_completions' as const,
    bound: BOUND,
  }));
}

function harness(t: Test, env: Record<string, string> = {}): Promise<Harness | null> {
  return startRedisHarness(t, { workers: 2, env });
}

for (const flushMs of ['100', '0']) {
  t.test(`50 concurrent reservations over Redis, K funded (flush_ms ${flushMs}): exactly K admitted, settlements idempotent`, async (t) => {
    const h = await harness(t, { BILLING_FLUSH_MS: flushMs });
    if (h === null) return;
    const K = 9;
    const credits = K * C;
    const orgId = await h.call<string>('createOrg', { id: randomUUID(), balance: credits });
    const [a, b] = await Promise.all([
      h.worker<ReserveResult[]>(0, 'reserveMany', { list: reserveArgs(orgId, 'a', 25) }),
      h.worker<ReserveResult[]>(1, 'reserveMany', { list: reserveArgs(orgId, 'b', 25) }),
    ]);
    const all = [...a, ...b];
    const admitted = all.filter((r): r is { ok: true; hold: Hold } => r.ok);
    t.equal(admitted.length, K, `exactly K=${K} of 50 admitted`);
    t.ok(all.filter((r) => !r.ok).every((r) => !r.ok && r.code === 'insufficient_funds' && r.status === 402), 'the rest refused with 402');
    const settles = admitted.map((r, i) => ({
      hold: r.hold,
      metered: { inputTokens: 300 + i * 37, cachedInputTokens: i * 11, cacheWriteTokens: 0, outputTokens: 100 + i * 997, imageUnits: 0, source: 'supplier' },
    }));
    await settleOnBoth(h, settles);
    const m = await books(h, orgId);
    t.equal(m.rows, K, 'one usage row per admitted call');
    t.equal(m.balance, credits - m.charged, 'balance = credits − sum(charged), to the micro');
    t.equal(m.journal, m.balance, 'and = the sum of its journal');
    const view = await h.worker<{ balance: number; heldBalance: number; openHolds: number }>(1, 'account', { orgId });
    t.same([view.balance, view.heldBalance, view.openHolds], [m.balance, 0, 0], 'the actor agrees with the store');
    await Promise.all([h.worker(0, 'settle', settles[0]), h.worker(1, 'settle', settles[0]), h.worker(1, 'settle', settles[3])]);
    t.same(await books(h, orgId), m, 'repeated settlements changed nothing');
  });
}

t.test('kill -9 of a worker with holds open: released one lease after its last heartbeat', async (t) => {
  const lease = 1500;
  const h = await harness(t, { HOLD_LEASE_MS: String(lease) });
  if (h === null) return;
  const K = 4;
  const orgId = await h.call<string>('createOrg', { id: randomUUID(), balance: K * C + 10_000 });
  const held = await h.worker<ReserveResult[]>(0, 'reserveMany', { list: reserveArgs(orgId, 'doomed', K) });
  t.equal(held.filter((r) => r.ok).length, K, `${K} holds taken by the doomed worker`);
  await h.call('kill', { index: 0 });
  const killedAt = Date.now();
  t.equal((await h.worker<ReserveResult>(1, 'reserve', reserveArgs(orgId, 'early', 1)[0])).ok, false, 'right after the kill the money is still held');
  let view = await h.worker<{ openHolds: number }>(1, 'account', { orgId });
  while (view.openHolds > 0 && Date.now() - killedAt < lease * 4) {
    await new Promise((r) => setTimeout(r, 50));
    view = await h.worker(1, 'account', { orgId });
  }
  const after = Date.now() - killedAt;
  t.equal(view.openHolds, 0, `released ${after} ms after the kill`);
  t.ok(after <= lease + 2000, 'within the lease, plus a heartbeat poll and a sweep');
  const again = await h.worker<ReserveResult[]>(1, 'reserveMany', { list: reserveArgs(orgId, 'again', K) });
  t.equal(again.filter((r) => r.ok).length, K, 'the released money is spendable again');
});

t.test('quotas: one actor counts every worker’s calls', async (t) => {
  const h = await harness(t);
  if (h === null) return;
  const orgId = await h.call<string>('createOrg', { id: randomUUID(), balance: 100 * C, quotaPerSecond: 1000, quotaPerMinute: 6 });
  const [a, b] = await Promise.all([
    h.worker<ReserveResult[]>(0, 'reserveMany', { list: reserveArgs(orgId, 'qa', 5) }),
    h.worker<ReserveResult[]>(1, 'reserveMany', { list: reserveArgs(orgId, 'qb', 5) }),
  ]);
  const all = [...a, ...b];
  t.equal(all.filter((r) => r.ok).length, 6, 'the minute admits 6 in all, from both workers');
  t.ok(all.filter((r) => !r.ok).every((r) => !r.ok && r.code === 'rate_limited' && r.status === 429), 'the rest 429');
  t.match(all.find((r) => !r.ok), { limit: { kind: 'request_quota', window: 'per_minute', limit: 6 } }, 'the refusal names the per-minute window');
});
