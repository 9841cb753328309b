// POST /v1/images/generations request, per the spec's member table: `model`
// and `prompt` required, `n` and `size` optional, and the members of
// OpenAI's current API clients send (issue 31; which are carried: prepare.ts
// and docs/api/images.md). Other members are refused as invalid_request.
// Every number is bounded before any arithmetic.
import { identifier, nullable } from '../members.js';
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
    // Carried: how the image comes back (either passes through), its look and file format.
    response_format: nullable({ enum: ['b64_json', 'url'] }),
    style: nullable({ enum: ['vivid', 'natural'] }),
    background: nullable({ enum: ['transparent', 'opaque', 'auto'] }),
    output_format: nullable({ enum: ['png', 'jpeg', 'webp'] }),
    output_compression: nullable(integer(0, 100)),
    moderation: nullable({ enum: ['low', 'auto'] }),
    user: identifier,
    // Accepted and not carried: a higher quality costs the operator more than the catalog's price per image.
    quality: nullable({ enum: ['standard', 'hd', 'low', 'medium', 'high', 'auto'] }),
  },
} as const;
