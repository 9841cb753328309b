// POST /v1/embeddings request, per the spec's member table: `model`, `input`
// (an array of strings) and `encoding_format`, which must be `base64` — a
// float reply is refused by name, and so is a request with no
// encoding_format (it implies float). Members outside the table are refused
// by name too. The batch bounds (EMBEDDINGS_MAX_INPUTS here, the bytes in
// prepare.ts) hold before any supplier is called.

/** At most this many inputs in one request (spec, Limits). */
export const EMBEDDINGS_MAX_INPUTS = 128;
/** At most this many UTF-8 bytes over all inputs (spec, Limits). */
export const EMBEDDINGS_MAX_BYTES = 131072;

export const embeddingsRequestSchema = {
  type: 'object',
  // In this order, so a body missing several names encoding_format first.
  required: ['encoding_format', 'input', 'model'],
  additionalProperties: false,
  properties: {
    encoding_format: { const: 'base64' },
    // A bare string is not an array of strings; an empty input has nothing to embed.
    input: { type: 'array', minItems: 1, maxItems: EMBEDDINGS_MAX_INPUTS, items: { type: 'string', minLength: 1 } },
    model: { type: 'string', minLength: 1 },
  },
} as const;
