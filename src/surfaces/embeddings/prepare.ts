// Embeddings request: validation and preparation, a pure function of the body,
// run inline for small bodies and in the worker-thread pool for large ones
// (workers/prepare-request.ts through the registry, surfaces/index.ts).
import type { BoundRequest } from '../../billing/types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { Prepared } from '../surface.js';
import { assertValid, compile } from '../validate.js';
import { EMBEDDINGS_MAX_BYTES, embeddingsRequestSchema } from './schema.js';

const validate = compile(embeddingsRequestSchema);

export function prepareEmbeddings(raw: unknown, _bodyBytes: number): Prepared {
  assertValid(validate, raw);
  const body = raw as { model: string; input: string[]; encoding_format: 'base64'; user?: string | null };
  let bytes = 0;
  for (const text of body.input) bytes += Buffer.byteLength(text, 'utf8');
  if (bytes > EMBEDDINGS_MAX_BYTES) throw new GatewayError('invalid_request', { param: 'input' });
  const bound: BoundRequest = {
    // A token covers at least one byte: the inputs' bytes bound their tokens.
    inputTokens: bytes,
    mediaTokens: 0,
    turns: body.input.length,
    // Embeddings produce no output tokens: the output bound is 0 × 0.
    statedCeiling: null,
    ceilingParam: 'input',
    defaultCeiling: 0,
    choices: 0,
    imageUnits: 0,
  };
  // Only the model is set per route; encoding_format is already base64, so
  // the supplier is asked for base64 and its strings pass through undecoded.
  // dimensions and user are carried (user null: left out).
  const { model: _model, ...rest } = body;
  if (rest.user === null) delete rest.user;
  return { decoded: { model: body.model, stream: false, bound }, rest: JSON.stringify(rest), meta: {} };
}

/** The inputs' text, for a local count (a tighter reservation, or settlement without supplier usage). */
export function embeddingsInputText(prepared: Prepared): string {
  return (JSON.parse(prepared.rest) as { input: string[] }).input.join('\n');
}
