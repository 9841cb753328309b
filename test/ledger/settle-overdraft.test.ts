// Issue 12 item 7 (settlement): a supplier's count above the hold is charged
// in full, its excess recorded as overdraft on the usage row and counted in a
// metric, and the balance may go below zero by it. The same through both
// ledger hosts: a real cluster (test/fixtures/ledger-harness.ts) whose worker
// Billing reaches the embedded host over IPC, or the Redis-streams host.
import { randomUUID } from 'node:crypto';
import t, { type Test } from 'tap';
import { boundCost, costOf } from '../../src/billing/pricing.js';
import type { Price } from '../../src/catalog/types.js';
import { testDatabase } from '../helpers/services.js';
import { startHarness, startRedisHarness, type Harness, type ReserveResult } from './harness.js';

const PRICE: Price = { inputPerMtok: 2_500_000, cachedInputPerMtok: 1_250_000, outputPerMtok: 10_000_000, imageUnit: 0 };
const BOUND = { inputTokens: 100, outputTokens: 50, imageUnits: 0 };
const HELD = boundCost(PRICE, BOUND);
/** What the supplier reports: far more input than the estimate that was reserved (an image, say). */
const METERED = { inputTokens: 9000, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 40, imageUnits: 0, source: 'supplier' as const };
const COST = costOf(PRICE, { inputTokens: 9000, cachedInputTokens: 0, outputTokens: 40, imageUnits: 0 });

async function harness(t: Test, redis: boolean): Promise<Harness | null> {
  if (redis) return startRedisHarness(t, { workers: 1 });
  const db = await testDatabase(t);
  return db === null ? null : startHarness(t, { store: db, workers: 1 });
}

for (const host of ['embedded', 'redis'] as const) {
  t.test(`issue 12 item 7: a charge above the hold is settled in full, recorded as overdraft and counted (${host} host)`, async (t) => {
    t.ok(COST > 2 * HELD, `the metered cost (${COST}) is well above the hold (${HELD})`);
    const h = await harness(t, host === 'redis');
    if (h === null) return;
    const credits = 2 * HELD; // enough for the hold, not for the cost
    const orgId = await h.call<string>('createOrg', { id: randomUUID(), balance: credits });
    const key = { id: randomUUID(), orgId, funding: 'balance' as const };
    const reserved = await h.worker<ReserveResult>(0, 'reserve', { requestId: `od_${host}`, key, model: { modelId: randomUUID(), price: PRICE }, surface: 'chat_completions', bound: BOUND });
    if (!reserved.ok) return void t.fail(`reservation refused: ${reserved.code}`);
    t.equal(reserved.hold.reserved, HELD);
    await h.worker(0, 'settle', { hold: reserved.hold, metered: METERED });
    await h.worker(0, 'sync');

    const [row] = await h.call<any[]>('sql', {
      text: 'SELECT reserved_micros, charged_micros, overdraft_micros, input_tokens FROM usage_records WHERE org_id = $1',
      params: [orgId],
    });
    t.same(row, { reserved_micros: HELD, charged_micros: COST, overdraft_micros: COST - HELD, input_tokens: 9000 }, 'the usage row: the full charge and the overdraft');
    const [org] = await h.call<any[]>('sql', {
      text: 'SELECT balance_micros, (SELECT sum(amount_micros)::bigint FROM ledger_entries WHERE org_id = $1) AS journal FROM organization_money WHERE id = $1',
      params: [orgId],
    });
    t.equal(org.balance_micros, credits - COST, 'the balance moved by the full charge, below zero');
    t.equal(org.journal, org.balance_micros, 'and equals its journal');
    const view = await h.worker<{ balance: number; heldBalance: number }>(0, 'account', { orgId });
    t.same([view.balance, view.heldBalance], [credits - COST, 0], 'the actor agrees');
    const counters = await h.worker<Record<string, number>>(0, 'counters');
    t.equal(counters.billing_overdraft_calls, 1, 'one overdrawn call counted');
    t.equal(counters.billing_overdraft_micros, COST - HELD, 'its overdraft counted in micros');
    const again = await h.worker<ReserveResult>(0, 'reserve', { requestId: `od2_${host}`, key, model: { modelId: randomUUID(), price: PRICE }, surface: 'chat_completions', bound: BOUND });
    t.match(again, { ok: false, code: 'insufficient_funds' }, 'the debt refuses the next call');
  });
}
