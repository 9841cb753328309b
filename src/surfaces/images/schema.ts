// POST /v1/images/generations request, per the spec's member table: `model`
// and `prompt` required, `n` and `size` optional. Members outside the table
// are refused as invalid_request (the images envelope's param is always
// null, so the answer cannot name the member). Every number is bounded
// before any arithmetic.
import { integer } from '../validate.js';

/** At most this many images in one request: n units are reserved up front, so n is bounded (README, Billing). */
export const IMAGES_MAX_N = 10;
/** The largest width or height `size` may state, in pixels. */
export const IMAGES_MAX_SIDE = 4096;

export const imagesRequestSchema = {
  type: 'object',
  required: ['model', 'prompt'],
  additionalProperties: false,
  properties: {
    model: { type: 'string', minLength: 1 },
    prompt: { type: 'string', minLength: 1 },
    n: integer(1, IMAGES_MAX_N),
    // WIDTHxHEIGHT, each 1–9999 by the pattern (no sign, no leading zero, no exponent); prepare() holds each to IMAGES_MAX_SIDE.
    size: { type: 'string', pattern: '^[1-9][0-9]{0,3}x[1-9][0-9]{0,3}$' },
  },
} as const;
