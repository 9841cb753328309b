// The responses usage vocabulary, both ways. A supplier's input_tokens
// INCLUDE its cached input (input_tokens_details.cached_tokens), as the
// gateway's Metered.inputTokens does; its output_tokens include the
// reasoning tokens (output_tokens_details.reasoning_tokens).
import type { Metered } from '../../billing/types.js';

/** A supplier's usage as reported, every member a non-negative integer (absent or malformed: 0). */
export interface SupplierUsage {
  input: number;
  cached: number;
  output: number;
  reasoning: number;
}

function count(v: unknown): number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : 0;
}

export function supplierUsage(u: Record<string, any>): SupplierUsage {
  return {
    input: count(u.input_tokens),
    cached: count(u.input_tokens_details?.cached_tokens),
    output: count(u.output_tokens),
    reasoning: count(u.output_tokens_details?.reasoning_tokens),
  };
}

export function meter(u: SupplierUsage): Metered {
  return { inputTokens: u.input, cachedInputTokens: Math.min(u.cached, u.input), cacheWriteTokens: 0, outputTokens: u.output, imageUnits: 0, source: 'supplier' };
}

/**
 * ResponsesUsage of the settled figures. `reasoning` is the supplier's
 * reasoning count when the settlement is the supplier's own usage (a local
 * count knows of no reasoning), kept within what was settled.
 */
export function usageJson(settled: Metered, reasoning: number): string {
  const cached = Math.min(settled.cachedInputTokens, settled.inputTokens);
  const r = settled.source === 'supplier' ? Math.min(reasoning, settled.outputTokens) : 0;
  return (
    `{"input_tokens":${settled.inputTokens},"input_tokens_details":{"cached_tokens":${cached}},` +
    `"output_tokens":${settled.outputTokens},"output_tokens_details":{"reasoning_tokens":${r}},` +
    `"total_tokens":${settled.inputTokens + settled.outputTokens}}`
  );
}
