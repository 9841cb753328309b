// What a local operation is: an operation on a model that the gateway
// answers itself (count_tokens), with no supplier, no reservation and no
// model-call quota (the key's concurrency slot and a quota of its own
// instead). Data (path, envelope, carrier, the protocol and modality the
// model and key must allow) plus pure functions; pipeline/local.ts runs every
// one the same way: authenticate → slot → quota → decode → resolve → scope →
// compute → answer.
import type { Carrier } from '../auth/types.js';
import type { CatalogModel, ModalityCode, ProtocolCode } from '../catalog/types.js';
import type { EnvelopeKind } from '../errors/envelopes.js';

/** What compute() may use: work that belongs in the worker-thread pool. */
export interface LocalTools {
  /** o200k_base token counts of each text (in the pool). */
  countTokens(texts: string[]): Promise<number[]>;
}

/** Result of decoding a body in the pool: the decoded request, or the refusal to send. */
export type DecodeResult<D> = { ok: true; decoded: D } | { ok: false; code: 'invalid_json' | 'invalid_request' | 'nesting_too_deep'; param: string | null; message?: string };

export interface LocalOperation<D> {
  readonly path: string;
  readonly envelope: EnvelopeKind;
  readonly carrier: Carrier;
  /** The model must be served on this protocol… */
  readonly protocol: ProtocolCode;
  /** …and the key's scope must allow this modality. */
  readonly modality: ModalityCode;
  /**
   * Validates the parsed body; throws GatewayError('invalid_request',
   * {param}). Pure (no catalog, no I/O) and returns plain data, so the pool
   * can run it for a large body.
   */
  decode(body: unknown, bodyBytes: number): D;
  /**
   * Optional: work on the decoded data that is as large as the body (count
   * its tokens). When the body was decoded in the pool, this runs there too,
   * in the same task, with that thread's tokenizer, so only small results
   * cross back to the event loop; compute() then finds it done. Pure apart
   * from `countTokens`.
   */
  inPool?(decoded: D, countTokens: (texts: string[]) => Promise<number[]>): Promise<D>;
  /** The model as the caller named it. */
  modelOf(decoded: D): string;
  /** The answer's JSON text. */
  compute(decoded: D, model: CatalogModel, tools: LocalTools): Promise<string>;
}
