// Where a request's bound meets its model (issue 12 items 2 and 7): the
// output bound within max_output_tokens × n, refusals by name, and the
// counted input estimate.
import t from 'tap';
import { boundFor, countedBound, outputCeiling } from '../../src/billing/bound.js';
import type { BoundRequest } from '../../src/billing/types.js';
import type { CatalogModel } from '../../src/catalog/types.js';
import { GatewayError } from '../../src/errors/gateway-error.js';

const model = (maxOutputTokens: number | null, contextWindowTokens: number | null = null) => ({ maxOutputTokens, contextWindowTokens }) as CatalogModel;
const req = (over: Partial<BoundRequest> = {}): BoundRequest => ({
  inputTokens: 1000, mediaTokens: 0, turns: 1, statedCeiling: null, ceilingParam: 'max_completion_tokens', defaultCeiling: 32768, choices: 1, imageUnits: 0, ...over,
});
const refused = (fn: () => unknown): string | null => {
  try {
    fn();
    return null;
  } catch (err) {
    if (!(err instanceof GatewayError) || err.code !== 'invalid_request') throw err;
    return err.param;
  }
};

t.test('issue 12 item 2: the output bound is min(stated or default, the model max) × n', async (t) => {
  t.same(boundFor(req({ statedCeiling: 100, ceilingParam: 'max_tokens', choices: 3 }), model(32768)), { inputTokens: 1000, outputTokens: 300, imageUnits: 0 });
  t.equal(boundFor(req({ choices: 2 }), model(16384)).outputTokens, 16384 * 2, 'the default lowered to the model max');
  t.equal(boundFor(req({ choices: 2 }), model(null)).outputTokens, 32768 * 2, 'no model max: the default');
  t.equal(boundFor(req({ statedCeiling: 16384, choices: 128 }), model(16384)).outputTokens, 16384 * 128, 'the model max itself, × the largest n');
  t.equal(outputCeiling(req({ statedCeiling: 500 }), 16384), 500);
  t.equal(outputCeiling(req(), 16384), 16384);
});

t.test('issue 12 item 2: a stated ceiling above the model max, or a bound beyond exact pricing, is refused by name', async (t) => {
  t.equal(refused(() => boundFor(req({ statedCeiling: 16385, ceilingParam: 'max_tokens' }), model(16384))), 'max_tokens');
  t.equal(refused(() => boundFor(req({ statedCeiling: 16385 }), model(16384))), 'max_completion_tokens');
  // A model with no stated max: the bound × n must still be exactly priceable.
  t.equal(refused(() => boundFor(req({ statedCeiling: Number.MAX_SAFE_INTEGER, ceilingParam: 'max_tokens', choices: 2 }), model(null))), 'max_tokens');
  t.equal(refused(() => boundFor(req({ statedCeiling: 10_000_000, choices: 128 }), model(null))), 'max_completion_tokens');
  t.equal(refused(() => boundFor(req({ inputTokens: 2e9 }), model(16384))), 'messages');
});

t.test('issue 12 item 7: input within the context window; the counted estimate with its margin, never above the cheap one', async (t) => {
  t.equal(boundFor(req({ inputTokens: 500_000 }), model(16384, 128_000)).inputTokens, 128_000, 'a model reads at most its context window');
  t.equal(boundFor(req({ inputTokens: 2e9 }), model(16384, 128_000)).inputTokens, 128_000);
  const r = req({ inputTokens: 40_000, mediaTokens: 1445, turns: 3 });
  const b = boundFor(r, model(16384));
  // 8000 text tokens × 5/4 + 3 turns × 8 + 16 + the image's 1445.
  t.equal(countedBound(r, b, 8000, model(16384)).inputTokens, 10_000 + 24 + 16 + 1445);
  t.equal(countedBound(r, b, 8001, model(16384)).inputTokens, 10_002 + 24 + 16 + 1445, 'rounded up');
  t.equal(countedBound(r, b, 39_000, model(16384)).inputTokens, 40_000, 'never above the cheap estimate');
  t.equal(countedBound(r, b, 8000, model(16384, 5000)).inputTokens, 5000, 'within the context window');
  t.equal(countedBound(r, b, 8000, model(16384)).outputTokens, b.outputTokens, 'the output bound is unchanged');
});
