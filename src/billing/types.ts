// The billing sequence as the pipeline calls it: one reserve before the
// supplier is called, one settle after. Surfaces never touch money.
import type { ApiKey, Funding } from '../auth/types.js';
import type { CatalogModel, Price, ProtocolCode } from '../catalog/types.js';

export type Surface = ProtocolCode;
export type Outcome = 'completed' | 'incomplete' | 'failed' | 'cancelled';

/** The finite bound reserved before the upstream call. */
export interface Bound {
  /** Cheap upper estimate of input tokens (no tokenizer on the event loop). */
  inputTokens: number;
  /** The output ceiling (chat/responses: the request's or 32768; messages: max_tokens; embeddings: 0). */
  outputTokens: number;
  /** images: n; others 0. */
  imageUnits: number;
}

/**
 * What was consumed: the supplier's usage; failing that, a local count; and
 * when the local count fails too, an upper estimate (pipeline/settle.ts), never zero.
 */
export interface Metered {
  /**
   * All input tokens, INCLUDING those served from the supplier's cache (as
   * chat's prompt_tokens and responses' input_tokens count them; for messages:
   * input_tokens + cache_read_input_tokens + cache_creation_input_tokens).
   */
  inputTokens: number;
  /** The part of inputTokens served from the supplier's cache: billed at the cached-input price instead of the input price. */
  cachedInputTokens: number;
  outputTokens: number;
  imageUnits: number;
  source: 'supplier' | 'local' | 'estimate';
}

export interface Hold {
  requestId: string;
  orgId: string;
  keyId: string;
  modelId: string;
  surface: Surface;
  funding: Funding;
  price: Price;
  /** The bound that was priced and held (a failed local count settles on it, pipeline/settle.ts). */
  bound: Bound;
  /** Micros held. */
  reserved: number;
}

export interface Timings {
  /** ms from request start to the first byte sent to the client; null if none. */
  ttfbMs: number | null;
  totalMs: number;
}

export interface Billing {
  /**
   * Admission (per-organization request quotas) and reservation of the bound,
   * atomically against the key's funding source. Throws GatewayError
   * `rate_limited` (with retryAfterSeconds) or `insufficient_funds`.
   */
  reserve(requestId: string, key: ApiKey, model: CatalogModel, surface: Surface, bound: Bound): Promise<Hold>;
  /**
   * Charges `metered` at the hold's price (null: nothing consumed), releases
   * the rest, records the usage row. Idempotent by request id. Resolves when
   * the charge is as durable as billing.flush_ms promises; never rejects.
   */
  settle(hold: Hold, metered: Metered | null, outcome: Outcome, timings: Timings, supplier: string | null): Promise<void>;
}
