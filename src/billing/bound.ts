// Where a request's bound meets its model. prepare() is pure and runs before
// the model is resolved, so it only states what the caller asked for
// (BoundRequest); the model's ceilings apply here, once, for both the amount
// reserved and the bound the upstream body carries (surfaces call
// outputCeiling, the reservation calls boundFor), so the two cannot differ.
import type { CatalogModel } from '../catalog/types.js';
import { GatewayError } from '../errors/gateway-error.js';
import { MAX_COUNTED } from './pricing.js';
import type { Bound, BoundRequest } from './types.js';

/**
 * Safety margin of a counted input estimate (docs/billing.md): the text's
 * o200k_base tokens × 5/4 (other tokenizers count up to ~20% more for the
 * same text), plus chat-template tokens per turn and per call.
 */
export const COUNT_MARGIN_NUM = 5;
export const COUNT_MARGIN_DEN = 4;
export const TOKENS_PER_TURN = 8;
export const TOKENS_PER_CALL = 16;

/**
 * The per-choice output ceiling reserved and sent upstream: the stated one,
 * or the surface's default lowered to the model's max_output_tokens. A stated
 * ceiling above the model's is refused in boundFor before this is used.
 */
export function outputCeiling(req: BoundRequest, maxOutputTokens: number | null): number {
  const ceiling = req.statedCeiling ?? req.defaultCeiling;
  return maxOutputTokens === null ? ceiling : Math.min(ceiling, maxOutputTokens);
}

/** The input tokens the model can read: never more than its context window. */
function withinContext(tokens: number, model: CatalogModel): number {
  return model.contextWindowTokens === null ? tokens : Math.min(tokens, model.contextWindowTokens);
}

/**
 * The bound to reserve for `req` on `model`. Refuses by name (400
 * invalid_request) a stated ceiling above the model's max_output_tokens — as
 * OpenAI and Anthropic do — and any bound beyond what pricing counts exactly.
 */
export function boundFor(req: BoundRequest, model: CatalogModel): Bound {
  if (req.statedCeiling !== null && model.maxOutputTokens !== null && req.statedCeiling > model.maxOutputTokens) {
    throw new GatewayError('invalid_request', {
      param: req.ceilingParam,
      message: `${req.ceilingParam}: ${req.statedCeiling} is above this model's maximum of ${model.maxOutputTokens} output tokens.`,
    });
  }
  const outputTokens = outputCeiling(req, model.maxOutputTokens) * req.choices;
  if (outputTokens > MAX_COUNTED) throw new GatewayError('invalid_request', { param: req.statedCeiling !== null ? req.ceilingParam : 'n' });
  const inputTokens = withinContext(req.inputTokens, model);
  if (inputTokens > MAX_COUNTED) throw new GatewayError('invalid_request', { param: 'messages' });
  return { inputTokens, outputTokens, imageUnits: req.imageUnits };
}

/** The bound with its text counted: `textTokens` (o200k_base) with the margin, plus the media parts as estimated. */
export function countedBound(req: BoundRequest, bound: Bound, textTokens: number, model: CatalogModel): Bound {
  const text = Math.ceil((textTokens * COUNT_MARGIN_NUM) / COUNT_MARGIN_DEN);
  const input = withinContext(text + req.turns * TOKENS_PER_TURN + TOKENS_PER_CALL + req.mediaTokens, model);
  return { ...bound, inputTokens: Math.min(input, bound.inputTokens) };
}
