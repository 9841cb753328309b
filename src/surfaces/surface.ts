// What a protocol surface is: data (path, envelope, carrier, modality) plus a
// codec that reads its own protocol's request and writes its own protocol's
// replies, chunks and errors. One generic pipeline (pipeline/run.ts) runs
// every surface; no surface copies another's handler, and no body is
// squeezed through a canonical form.
import type { Carrier } from '../auth/types.js';
import type { BoundRequest, Metered, Outcome } from '../billing/types.js';
import type { ModalityCode, ProtocolCode, Route as CatalogRoute } from '../catalog/types.js';
import type { EnvelopeKind } from '../errors/envelopes.js';
import type { SseEvent } from '../suppliers/sse-reader.js';

/**
 * A model surface's prefix: its path's first two segments (/v1/chat for
 * /v1/chat/completions, /v1/messages for /v1/messages/count_tokens), so that
 * a caller of one SDK gets its own envelope for a path it mistyped.
 */
export function surfacePrefix(path: string): string {
  return path.split('/').slice(0, 3).join('/');
}

/** What the pipeline reads from a validated request. */
export interface Decoded {
  /** The model as the caller named it (echoed back exactly). */
  model: string;
  stream: boolean;
  /** What the request states about its bound; the model's ceilings apply at reservation (billing/bound.ts). */
  bound: BoundRequest;
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
  /** Small surface-specific facts for upstreamBody(), verify() and the transcoder (e.g. include_usage, previous_response_id). */
  meta: Record<string, boolean | string>;
}

/** Result of preparing a body in the pool: the prepared request, or the refusal to send. */
export type PrepareResult = { ok: true; prepared: Prepared } | { ok: false; code: 'invalid_json' | 'invalid_request' | 'nesting_too_deep'; param: string | null };

/** Result of decoding a supplier reply in the pool: the decoder's plain data, or the reply was not what the protocol answers. */
export type DecodeReplyResult = { ok: true; decoded: unknown } | { ok: false };

/** Identity of one call, for re-encoding replies as the gateway's own. */
export interface CallInfo {
  requestId: string;
  /** The model as the caller named it. */
  model: string;
  /** Whole seconds since the epoch. */
  created: number;
  /** The organization the call is charged to (responses records which organization owns a response id). */
  orgId: string;
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
   * request's size: outside media parts, the cheap upper bound of its input
   * tokens (a token covers at least one byte).
   */
  prepare(body: unknown, bodyBytes: number): Prepared;
  /**
   * Optional asynchronous check between decode and reservation, for what a
   * pure prepare() cannot know (responses: that previous_response_id belongs
   * to the caller's organization). Throws a GatewayError to refuse; absent
   * on surfaces with nothing to look up.
   */
  verify?(prepared: Prepared, call: CallInfo): Promise<void>;
  /**
   * The JSON text sent to one supplier route: the caller's body with only what
   * must change. `maxOutputTokens` is the model's own ceiling, if known: the
   * body carries exactly one output bound, outputCeiling(bound, it), the one
   * reserved (billing/bound.ts).
   */
  upstreamBody(prepared: Prepared, route: CatalogRoute, maxOutputTokens: number | null): string;
  /** Text of the request, for a local input count when the supplier reports no usage (rare: may re-parse). */
  inputText(prepared: Prepared): string;
  unary(upstream: unknown, call: CallInfo): UnaryResult;
  /**
   * Optional, for surfaces whose unary replies can be large (embeddings as
   * float arrays): a supplier reply of more than `minBytes` is parsed and
   * decoded in the pool by this protocol's REPLY_DECODERS entry
   * (surfaces/preparers.ts; workers/decode-reply.ts), a pure function from the
   * parsed reply to plain data, and `result` makes the UnaryResult of that
   * data on the event loop. unary(r, c) must equal result(decode(r), c).
   */
  readonly replyInPool?: { readonly minBytes: number; result(decoded: unknown, call: CallInfo): UnaryResult };
  stream(call: CallInfo, prepared: Prepared): StreamTranscoder;
}
