// The surface contract. A surface is one folder under src/surfaces/ and one
// entry of the registry (surfaces/index.ts); it plays one of two roles:
// - a model call: a request surface (path, envelope, carrier, modality, a
//   pure prepare) joined to a model-call surface (the upstream body, a pure
//   reply decoder, metering, rendering, a stream transcoder), run by
//   pipeline/run.ts;
// - a local operation (count_tokens: surfaces/local-operation.ts), run by
//   pipeline/local.ts with no supplier and no money.
// Everything on the pool's side of that line (prepare, decodeReply) is a pure
// function of plain data, so a large body or a large reply is worked on in a
// worker thread by the same code that runs inline for small ones.
import type { Carrier } from '../auth/types.js';
import type { BoundRequest, Metered, Outcome } from '../billing/types.js';
import type { ModalityCode, ProtocolCode, Route as CatalogRoute } from '../catalog/types.js';
import type { EnvelopeKind } from '../errors/envelopes.js';
import type { SseEvent } from '../suppliers/sse-reader.js';
import type { ResponseOwnerBook } from './responses/ownership.js';

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

/** Small surface-specific facts of a request, for upstreamBody(), verify(), decodeReply() and the transcoder. */
export type RequestFacts = Record<string, boolean | string | number>;

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
  /** e.g. include_usage, previous_response_id, images' n. */
  meta: RequestFacts;
}

/** Result of preparing a body in the pool: the prepared request, or the refusal to send. */
export type PrepareResult = { ok: true; prepared: Prepared } | { ok: false; code: 'invalid_json' | 'invalid_request' | 'nesting_too_deep'; param: string | null; message?: string };

/**
 * A reply body in parts (text and UTF-8 bytes), sent one after the other
 * without being joined (server/respond.ts, sendJsonParts): megabytes of a
 * decoded reply (embeddings' data) go to the socket as the bytes the pool
 * made, with no string built, encoded or copied on the event loop.
 */
export type ReplyParts = ReadonlyArray<string | Uint8Array>;

/** Result of decoding a supplier reply in the pool: the decoder's plain data, or the reply was not what the protocol answers. */
export type DecodeReplyResult = ({ ok: true; decoded: unknown } | { ok: false }) & {
  /** The reply's blocks, moved back by the pool once read, for the next reply to reuse (suppliers/reply-limits.ts, recycleBlocks). */
  spent?: ArrayBuffer[];
};

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

/** What the pipeline needs to know of a decoded unary reply to settle it. */
export interface ReplyMeter {
  /**
   * What the supplier reported it consumed, or null when it reported no
   * token usage (the pipeline then counts the tokens locally and takes the
   * image units from `imageUnits`).
   */
  usage: Metered | null;
  /** Image units the reply carries (what is settled on a local count). */
  imageUnits: number;
  /** Output text, for a local count when usage is null. */
  producedText: string;
  outcome: Outcome;
  /** Something the gateway corrected in the reply, logged as a warning (never reply or prompt content); null when nothing. */
  warning: string | null;
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

/** The worker's services a surface's asynchronous stages may use (built once per worker, cluster/worker.ts). */
export interface SurfaceServices {
  /** Which organization owns each response id (responses' previous_response_id). */
  responseOwners: ResponseOwnerBook;
}

/** The request role: what the route is and how a body becomes a Prepared request. */
export interface RequestSurface {
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
}

/**
 * The model-call role, over R, the surface's decoded reply (plain data).
 * The unary path is decodeReply → meter → (settle) → render: decodeReply
 * runs in the pool for replies over `replyPoolBytes`, the rest on the event loop.
 */
export interface ModelCallSurface<R> {
  /** The protocol suppliers must speak for this surface (catalog routes, wires). */
  readonly protocol: ProtocolCode;
  /**
   * Optional asynchronous check after admission and reservation (so the
   * quota counts it) and before any supplier, for what a pure prepare()
   * cannot know (responses: that previous_response_id belongs
   * to the caller's organization). Throws a GatewayError to refuse.
   */
  verify?(prepared: Prepared, call: CallInfo, services: SurfaceServices): Promise<void>;
  /**
   * The JSON text sent to one supplier route: the caller's body with only what
   * must change. `maxOutputTokens` is the model's own ceiling, if known: the
   * body carries exactly one output bound, outputCeiling(bound, it), the one
   * reserved (billing/bound.ts).
   */
  upstreamBody(prepared: Prepared, route: CatalogRoute, maxOutputTokens: number | null): string;
  /** Text of the request, for a local input count when the supplier reports no usage (rare: may re-parse). */
  inputText(prepared: Prepared): string;
  /**
   * The supplier's parsed reply → R. Pure, and R is plain data (it crosses
   * threads by structured clone; a member that is a Uint8Array owning its
   * whole ArrayBuffer is moved instead: workers/decode-reply.ts). Throws GatewayError('upstream_error') when
   * the reply is not what the protocol answers. `meta` is the request's.
   */
  decodeReply(upstream: unknown, meta: RequestFacts): R;
  /**
   * Optional, for the replies a pool thread decodes: R read straight from the
   * reply's bytes, without JSON.parse and its garbage; null for any reply it
   * does not take, which then goes through JSON.parse and decodeReply. Must
   * give what decodeReply gives for every reply it takes.
   */
  decodeReplyBytes?(bytes: Uint8Array, meta: RequestFacts): R | null;
  /** Replies longer than this many bytes are parsed and decoded in the pool (surfaces/index.ts, REPLY_POOL_BYTES). */
  readonly replyPoolBytes: number;
  /**
   * The supplier request itself is made from a pool thread, which reads and
   * decodes the reply there (workers/fetch-reply.ts): for surfaces whose
   * replies run to megabytes, which the event loop would otherwise spend
   * ~2 ms per MB just receiving. Unary only.
   */
  readonly fetchInPool?: boolean;
  meter(reply: R): ReplyMeter;
  /**
   * The reply body as the gateway's own object, with the usage as settled. Pure.
   * Either JSON text, or the body in parts written in order (ReplyParts).
   */
  render(reply: R, call: CallInfo, settled: Metered): string | ReplyParts;
  /** Optional, after a unary reply or a stream was answered in full (responses records the response id's owner). */
  answered?(call: CallInfo, services: SurfaceServices): void;
  /** The stream transcoder; absent on surfaces that do not stream (their prepare() never sets stream). */
  stream?(call: CallInfo, prepared: Prepared, services: SurfaceServices): StreamTranscoder;
}

/** A surface that calls a model: both roles in one object of its folder's codec.ts. */
export type ModelSurface<R = any> = RequestSurface & ModelCallSurface<R>;
