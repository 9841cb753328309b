// POST /v1/embeddings request, per the spec's member table: `model`, `input`
// (an array of strings) and `encoding_format`, which must be `base64` — a
// float reply is refused by name, and so is a request with no
// encoding_format (it implies float). Members outside the table are refused
// by name too, except `dimensions` and `user`, which are carried (issue 31).
// The batch bounds (EMBEDDINGS_MAX_INPUTS here, the bytes in
// prepare.ts) hold before any supplier is called.

import { identifier } from '../members.js';
import { integer } from '../validate.js';

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
    encoding_format: { const: 'base64', 'x-rule': 'must be "base64": Tollgate passes the supplier\'s base64 through and answers no floats' },
    // A bare string is not an array of strings; an empty input has nothing to embed.
    input: {
      type: 'array', minItems: 1, maxItems: EMBEDDINGS_MAX_INPUTS, items: { type: 'string', minLength: 1 },
      'x-rule': `must be an array of 1 to ${EMBEDDINGS_MAX_INPUTS} non-empty strings (a bare string is refused)`,
    },
    model: { type: 'string', minLength: 1 },
    // Carried: fewer dimensions is the supplier's to honour (or refuse); the bound is OpenAI's largest model's width.
    dimensions: integer(1, 65536),
    user: identifier,
  },
} as const;
