// Pricing is exact integer maths: checked against BigInt on random inputs,
// rounding up once per call, embeddings input-only, the hold as the cap.
import t from 'tap';
import { boundCost, costOf, count, MAX_COUNTED, settlementCharge, tokensCost } from '../../src/billing/pricing.js';
import type { Price } from '../../src/catalog/types.js';

const chat: Price = { inputPerMtok: 2_500_000, cachedInputPerMtok: 1_250_000, outputPerMtok: 10_000_000, imageUnit: 0 };
const cheap: Price = { inputPerMtok: 150_000, cachedInputPerMtok: 75_000, outputPerMtok: 600_000, imageUnit: 0 };
const image: Price = { inputPerMtok: 0, cachedInputPerMtok: 0, outputPerMtok: 0, imageUnit: 40_000 };

function exact(parts: Array<[number, number]>): number {
  let sum = 0n;
  for (const [tokens, price] of parts) sum += BigInt(tokens) * BigInt(price);
  return Number((sum + 999_999n) / 1_000_000n);
}

t.test('tokensCost equals the exact BigInt ceiling on random inputs, up to the counted maximum', async (t) => {
  let seed = 42;
  const rnd = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  for (let i = 0; i < 20_000; i++) {
    const big = i % 4 === 0;
    const tk = (): number => (big ? MAX_COUNTED - rnd(1000) : rnd(200_000));
    const pr = (): number => (big ? 999_999_999 - rnd(1000) : rnd(50_000_000));
    const parts: Array<[number, number]> = [[tk(), pr()], [tk(), pr()], [tk(), pr()]];
    const got = tokensCost(parts[0][0], parts[0][1], parts[1][0], parts[1][1], parts[2][0], parts[2][1]);
    if (got !== exact(parts)) {
      t.fail(`mismatch for ${JSON.stringify(parts)}: ${got} vs ${exact(parts)}`);
      return;
    }
  }
  t.pass('20000 random calls exact');
});

t.test('rounds up once per call, not per part', async (t) => {
  // 1 input token at 0.15 micro and 1 output token at 0.6 micro: 0.75 → 1 micro (per part would be 2).
  t.equal(costOf(cheap, { inputTokens: 1, cachedInputTokens: 0, outputTokens: 1, imageUnits: 0 }), 1);
  t.equal(costOf(cheap, { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, imageUnits: 0 }), 0);
  // 1500 input of which 500 cached: 1000 at 2.5 micro + 500 at 1.25 + 200 output at 10 = 2500 + 625 + 2000.
  t.equal(costOf(chat, { inputTokens: 1500, cachedInputTokens: 500, outputTokens: 200, imageUnits: 0 }), 5125);
  t.equal(costOf(chat, { inputTokens: 2, cachedInputTokens: 1, outputTokens: 0, imageUnits: 0 }), 4, '2.5 + 1.25 = 3.75 → 4');
  t.equal(costOf(chat, { inputTokens: 1, cachedInputTokens: 1, outputTokens: 0, imageUnits: 0 }), 2, 'all cached: 1.25 → 2');
});

t.test('bound: input estimate at the uncached price plus the output ceiling', async (t) => {
  t.equal(boundCost(chat, { inputTokens: 1000, outputTokens: 32768, imageUnits: 0 }), 2500 + 327_680);
  t.equal(boundCost(cheap, { inputTokens: 3, outputTokens: 0, imageUnits: 0 }), 1);
  // One formula for every surface: what a bound holds is what it states (an embeddings bound states no output).
  t.equal(boundCost(chat, { inputTokens: 1000, outputTokens: 0, imageUnits: 0 }), 2500);
  t.equal(boundCost({ ...chat, imageUnit: 40_000 }, { inputTokens: 1000, outputTokens: 500, imageUnits: 2 }), 2500 + 5000 + 80_000);
  t.equal(boundCost(image, { inputTokens: 0, outputTokens: 0, imageUnits: 3 }), 120_000);
});

t.test('settlement: null metered charges nothing; above the hold is charged in full as overdraft (issue 12 item 7); cache writes at the input price', async (t) => {
  const none = settlementCharge(chat, null, 1000);
  t.same(none, { counts: { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, imageUnits: 0 }, cost: 0, charged: 0, overdraft: 0 });
  const ok = settlementCharge(chat, { inputTokens: 100, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 10, imageUnits: 0, source: 'supplier' }, 10_000);
  t.equal(ok.cost, 350);
  t.equal(ok.charged, 350);
  t.equal(ok.overdraft, 0);
  const over = settlementCharge(chat, { inputTokens: 100_000, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 10, imageUnits: 0, source: 'supplier' }, 10_000);
  t.equal(over.cost, 250_100);
  t.equal(over.charged, 250_100, 'the whole cost, not the hold');
  t.equal(over.overdraft, 240_100, 'the part above the hold');
  // What each surface consumed is its meter's to say (embeddings: 0 output, 0 image units); pricing takes the counts as given.
  const counted = settlementCharge(chat, { inputTokens: 10, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 0, imageUnits: 0, source: 'supplier' }, 10_000);
  t.same(counted.counts, { inputTokens: 10, cachedInputTokens: 0, outputTokens: 0, imageUnits: 0 });
  t.equal(counted.charged, 25);
  // Cache writes (messages' cache_creation_input_tokens) are part of the input, priced as uncached input: the catalog has no cache-write price.
  const writes = settlementCharge(chat, { inputTokens: 1000, cachedInputTokens: 200, cacheWriteTokens: 300, outputTokens: 0, imageUnits: 0, source: 'supplier' }, 10_000);
  t.equal(writes.cost, 800 * 2.5 + 200 * 1.25, 'writes at the input price, reads at the cached price');
  // Cached input is part of the input (chat's prompt_tokens includes cached_tokens): never billed twice.
  const cached = settlementCharge(chat, { inputTokens: 1000, cachedInputTokens: 800, cacheWriteTokens: 0, outputTokens: 0, imageUnits: 0, source: 'supplier' }, 10_000);
  t.equal(cached.cost, 200 * 2.5 + 800 * 1.25);
  const odd = settlementCharge(chat, { inputTokens: 10, cachedInputTokens: 50, cacheWriteTokens: 0, outputTokens: 0, imageUnits: 0, source: 'supplier' }, 10_000);
  t.same([odd.counts.inputTokens, odd.counts.cachedInputTokens, odd.cost], [10, 10, 13], 'cached above input is held to the input');
});

t.test('counts are whole, non-negative and bounded', async (t) => {
  t.equal(count(-5), 0);
  t.equal(count(Number.NaN), 0);
  t.equal(count(Number.POSITIVE_INFINITY), 0);
  t.equal(count(3.9), 3);
  t.equal(count(1e15), MAX_COUNTED);
});

t.test('issue 12 item 2: pricing never yields a non-finite or inexact amount: it throws instead', async (t) => {
  const bound = (inputTokens: number, outputTokens: number, imageUnits = 0) => ({ inputTokens, outputTokens, imageUnits });
  // The overflow of the issue: a 1e308 bound × n = 2 is Infinity, which count() used to turn into 0 (an input-only hold).
  t.throws(() => boundCost(cheap, bound(10, 1e308 * 2)), RangeError, 'Infinity output');
  t.throws(() => boundCost(cheap, bound(10, Number.NaN)), RangeError, 'NaN output');
  t.throws(() => boundCost(cheap, bound(10, MAX_COUNTED + 1)), RangeError, 'a bound is never clamped to the counted maximum');
  t.throws(() => boundCost(cheap, bound(-1, 10)), RangeError, 'negative input');
  t.throws(() => boundCost(cheap, bound(1.5, 10)), RangeError, 'fractional input');
  t.equal(boundCost(cheap, bound(MAX_COUNTED, MAX_COUNTED)), 150_000_000 + 600_000_000, 'the largest bound prices exactly');
  // A price so large that a product passes 2^53: refused, not rounded.
  const dear: Price = { inputPerMtok: 2 ** 52, cachedInputPerMtok: 0, outputPerMtok: 0, imageUnit: 0 };
  t.throws(() => boundCost(dear, bound(MAX_COUNTED, 0)), RangeError);
  t.throws(() => costOf({ ...image, imageUnit: 2 ** 52 }, { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, imageUnits: 4 }), RangeError);
  // Random bounds within range: always a safe integer.
  for (let i = 0; i < 2000; i++) {
    const cost = boundCost(chat, bound(Math.floor(Math.random() * MAX_COUNTED), Math.floor(Math.random() * MAX_COUNTED), i % 5));
    if (!Number.isSafeInteger(cost) || cost < 0) return t.fail(`not exact: ${cost}`);
  }
  t.pass('2000 random bounds priced to a safe integer');
});
