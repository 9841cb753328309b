// The billing sequence as the pipeline calls it: one reserve before the
// supplier is called, one settle after. Surfaces never touch money.
import type { ApiKey, Funding } from '../auth/types.js';
import type { CatalogModel, Price, ProtocolCode } from '../catalog/types.js';
import type { UsageRow } from '../ledger/protocol.js';

export type Surface = ProtocolCode;
export type Outcome = 'completed' | 'incomplete' | 'failed' | 'cancelled';

/** The finite bound reserved before the upstream call: every count a safe integer ≤ MAX_COUNTED (pricing.ts). */
export interface Bound {
  /** Upper estimate of input tokens (see docs/billing.md, "Input estimate"). */
  inputTokens: number;
  /** The output bound: the per-choice ceiling × choices (embeddings: 0). */
  outputTokens: number;
  /** images: n; others 0. */
  imageUnits: number;
}

/**
 * What a request states about its bound, before the model is known: computed
 * by a surface's pure prepare(), turned into a Bound where it meets the model
 * (billing/bound.ts), which is the only place the model's ceilings apply.
 */
export interface BoundRequest {
  /** Cheap upper estimate of input tokens: the body's bytes outside media parts, plus the media parts' tokens. */
  inputTokens: number;
  /** The media parts' share of inputTokens (images by detail, files at a stated figure): kept when the text is counted. */
  mediaTokens: number;
  /** Messages (turns): each adds a few tokens of chat template to a counted estimate. */
  turns: number;
  /** The per-choice output ceiling the caller stated, or null (the default applies). */
  statedCeiling: number | null;
  /** The member that stated it, for a refusal; when none is stated, what the upstream body carries. */
  ceilingParam: string;
  /** The ceiling when none is stated (chat, responses: 32768), within the model's max_output_tokens. */
  defaultCeiling: number;
  /** Completions asked for (chat n): the output bound is the ceiling × choices. */
  choices: number;
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
  /**
   * The part of inputTokens written to the supplier's cache (messages'
   * cache_creation_input_tokens; 0 elsewhere). The catalog has no cache-write
   * price: billed as uncached input (docs/billing.md, pricing.ts).
   */
  cacheWriteTokens: number;
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
  /** Micros held. */
  reserved: number;
  /** The estimate those micros price (input tokens, output bound, image units); a failed local count settles on it (pipeline/settle.ts). */
  bound: Bound;
  /** True when the input estimate came from a token count (the byte-based estimate did not fit the funds). */
  inputCounted: boolean;
}

export interface Timings {
  /** ms from request start to the first byte sent to the client; null if none. */
  ttfbMs: number | null;
  totalMs: number;
}

/** A tighter bound than the one refused: the text's tokens counted (in the worker pool). */
export interface TighterBound {
  /**
   * The least any count could give (no text at all: the output bound, the
   * media parts and the per-message tokens). When even this does not fit
   * the funds, no count is made and the call is refused at once (issue 38
   * item 2). Computed only after a refusal, so the common call pays nothing.
   */
  floor(): Bound;
  /** The counted bound, or null when there is none. */
  count(): Promise<Bound | null>;
}

export interface Billing {
  /**
   * Admission (per-organization request quotas) and reservation of the bound,
   * atomically against the key's funding source. Throws GatewayError
   * `rate_limited` (with retryAfterSeconds) or `insufficient_funds`. When
   * the bound does not fit the funds and `tighter` is given, it is asked once
   * for a smaller estimate (a token count, in the worker pool), and that one
   * is reserved if it fits what the ledger said is available — unless even
   * its floor does not fit, when the refusal stands without a count.
   * The hold itself, not a promise, when the call was reserved at once from
   * an allotment of this process (LedgerClient.reserveHere): the common call
   * waits for nothing here.
   */
  reserve(requestId: string, key: ApiKey, model: CatalogModel, surface: Surface, bound: Bound, tighter?: TighterBound | null): Hold | Promise<Hold>;
  /**
   * Charges `metered` at the hold's price (null: nothing consumed), releases
   * the rest, records the usage row. Idempotent by request id. Resolves when
   * the charge is as durable as billing.flush_ms promises; never rejects.
   * Resolves with the usage row the ledger took (metrics and the request
   * log line read it), or null when none was delivered.
   */
  settle(hold: Hold, metered: Metered | null, outcome: Outcome, timings: Timings, supplier: string | null): Promise<UsageRow | null>;
  /**
   * Voids a hold before any supplier was called (a check after admission
   * refused the call): nothing charged, no usage row, the admission stays
   * counted. Never rejects.
   */
  release(hold: Hold): Promise<void>;
  /**
   * Called as a stream delivers (cheap: it acts at the first chunk, then at
   * most once per PROGRESS_INTERVAL_MS): tells the ledger what this call would
   * settle on if its process died now (docs/billing.md, "Interrupted streams").
   */
  progress(hold: Hold | null, produced: { producedText(): string }, supplier: string | null): void;
}
