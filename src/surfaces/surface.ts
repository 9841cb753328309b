// What a protocol surface is: data (path, envelope, carrier, modality) plus a
// codec that reads its own protocol's request and writes its own protocol's
// replies, chunks and errors. One generic pipeline (pipeline/run.ts) runs
// every surface; no surface copies another's handler, and no body is
// squeezed through a canonical form.
import type { Carrier } from '../auth/types.js';
import type { Bound, Metered, Outcome } from '../billing/types.js';
import type { ModalityCode, ProtocolCode, Route as CatalogRoute } from '../catalog/types.js';
import type { EnvelopeKind } from '../errors/envelopes.js';
import type { SseEvent } from '../suppliers/sse-reader.js';

/** What the pipeline reads from a validated request. */
export interface Decoded {
  /** The model as the caller named it (echoed back exactly). */
  model: string;
  stream: boolean;
  bound: Bound;
}

/**
 * A request made ready for the pipeline. Plain data only: it is computed
 * where the body was parsed — inline for small bodies, in the worker-thread
 * pool for large ones — and crosses threads by structured clone.
 */
export interface Prepared {
  decoded: Decoded;
  /**
   * The upstream body, serialized once per request, without the members the
   * gateway sets per route (the model, and whatever the surface adds): JSON
   * text of an object. upstreamBody() only prepends to it, so a failover
   * attempt or a large body never costs a second serialization.
   */
  rest: string;
  /** Small surface-specific facts for upstreamBody() and the transcoder (e.g. include_usage). */
  meta: Record<string, boolean>;
}

/** Result of preparing a body in the pool: the prepared request, or the refusal to send. */
export type PrepareResult = { ok: true; prepared: Prepared } | { ok: false; code: 'invalid_json' | 'invalid_request' | 'nesting_too_deep'; param: string | null };

/** Identity of one call, for re-encoding replies as the gateway's own. */
export interface CallInfo {
  requestId: string;
  /** The model as the caller named it. */
  model: string;
  /** Whole seconds since the epoch. */
  created: number;
}

export interface UnaryResult {
  /** Usage the supplier reported, or null (then the pipeline counts locally). */
  metered: Metered | null;
  outcome: Outcome;
  /** Output text, for a local count when the supplier reported no usage. */
  producedText: string;
  /** The reply body, written with the usage as settled. */
  render(settled: Metered): string;
}

/** Re-encodes one upstream stream into the surface's own events. */
export interface StreamTranscoder {
  /** One upstream event in; SSE text out ('' when there is nothing to send). */
  event(ev: SseEvent): string;
  /** The upstream reached its natural end (e.g. [DONE], message_stop, response.completed). */
  readonly complete: boolean;
  /** Usage the supplier reported so far, or null. */
  metered(): Metered | null;
  outcome(): Outcome;
  producedText(): string;
  /** Terminal frames, written after settlement, given the settled usage. */
  finish(settled: Metered): string;
  /** Frames that tell the client the stream failed after it started ('' when the protocol has none). */
  failure(): string;
}

export interface SurfaceCodec {
  readonly protocol: ProtocolCode;
  readonly path: string;
  readonly envelope: EnvelopeKind;
  readonly carrier: Carrier;
  readonly modality: ModalityCode;
  /**
   * Validates the parsed body and prepares it; throws
   * GatewayError('invalid_request', {param}). A pure function of the body
   * (no catalog, no I/O), so the pool can run it too. `bodyBytes` is the
   * request's size, the cheap upper bound of its input tokens (a token covers
   * at least one byte).
   */
  prepare(body: unknown, bodyBytes: number): Prepared;
  /**
   * The JSON text sent to one supplier route: the caller's body with only what
   * must change. `maxOutputTokens` is the model's own ceiling, if known.
   */
  upstreamBody(prepared: Prepared, route: CatalogRoute, maxOutputTokens: number | null): string;
  /** Text of the request, for a local input count when the supplier reports no usage (rare: may re-parse). */
  inputText(prepared: Prepared): string;
  unary(upstream: unknown, call: CallInfo): UnaryResult;
  stream(call: CallInfo, prepared: Prepared): StreamTranscoder;
}
