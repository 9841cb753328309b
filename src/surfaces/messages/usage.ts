// The messages usage vocabulary, both ways. A supplier's input_tokens EXCLUDE
// its cache reads and writes; the gateway's Metered.inputTokens includes them
// (billing/types.ts). So metering adds them up, and rendering the settled
// usage takes them back out: input_tokens + cache_creation_input_tokens +
// cache_read_input_tokens = Metered.inputTokens, on the reply and on the
// stream's message_delta alike.
import type { Metered } from '../../billing/types.js';

/** A supplier's usage as reported, every member a non-negative integer (absent or malformed: 0). */
export interface SupplierUsage {
  input: number;
  cacheWrite: number;
  cacheRead: number;
  output: number;
}

function count(v: unknown): number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : 0;
}

export function supplierUsage(u: Record<string, unknown>): SupplierUsage {
  return {
    input: count(u.input_tokens),
    cacheWrite: count(u.cache_creation_input_tokens),
    cacheRead: count(u.cache_read_input_tokens),
    output: count(u.output_tokens),
  };
}

/** What is billed: all input (cache writes at the input price, reads at the cached price) and the output. */
export function meter(u: SupplierUsage): Metered {
  return {
    inputTokens: u.input + u.cacheWrite + u.cacheRead,
    cachedInputTokens: u.cacheRead,
    cacheWriteTokens: u.cacheWrite,
    outputTokens: u.output,
    imageUnits: 0,
    source: 'supplier',
  };
}

/**
 * MessagesReplyUsage of the settled figures, all four members. Cache reads
 * and writes are parts of Metered.inputTokens (a local count knows of
 * neither), each kept within what was settled.
 */
export function usageJson(settled: Metered): string {
  const cacheRead = Math.min(settled.cachedInputTokens, settled.inputTokens);
  const write = Math.min(settled.cacheWriteTokens, settled.inputTokens - cacheRead);
  return (
    `{"input_tokens":${settled.inputTokens - cacheRead - write},"cache_creation_input_tokens":${write},` +
    `"cache_read_input_tokens":${cacheRead},"output_tokens":${settled.outputTokens}}`
  );
}

const STOP_REASONS = new Set(['end_turn', 'max_tokens', 'stop_sequence', 'tool_use']);

/** The spec's four stop reasons; anything else a supplier says (pause_turn, refusal, …) ends the turn. */
export function normalizeStop(reason: unknown): string {
  return STOP_REASONS.has(reason as string) ? (reason as string) : 'end_turn';
}
