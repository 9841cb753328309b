// Images request: validation and preparation, a pure function of the body,
// run inline for small bodies and in the worker-thread pool for large ones
// (workers/prepare-request.ts through the registry, surfaces/index.ts).
import type { BoundRequest } from '../../billing/types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { Prepared } from '../surface.js';
import { assertValid, compile } from '../validate.js';
import { IMAGES_MAX_SIDE, imagesRequestSchema } from './schema.js';

const validate = compile(imagesRequestSchema);

type Body = { model: string; prompt: string; n?: number; size?: string; [member: string]: unknown };

export function prepareImages(raw: unknown, _bodyBytes: number): Prepared {
  assertValid(validate, raw);
  const body = raw as Body;
  if (body.size !== undefined) {
    const x = body.size.indexOf('x');
    if (Number(body.size.slice(0, x)) > IMAGES_MAX_SIDE || Number(body.size.slice(x + 1)) > IMAGES_MAX_SIDE) {
      throw new GatewayError('invalid_request', { param: 'size' });
    }
  }
  const n = body.n ?? 1;
  const bound: BoundRequest = {
    // Billed per image unit only (spec): no token is reserved or charged.
    inputTokens: 0,
    mediaTokens: 0,
    turns: 0,
    statedCeiling: null,
    ceilingParam: 'n',
    defaultCeiling: 0,
    choices: 0,
    imageUnits: n,
  };
  // Only the model is set per route; the prompt and the other members go as
  // sent (a null left out), except quality: not carried (schema.ts says why).
  const { model: _model, quality: _quality, ...rest } = body;
  for (const member of Object.keys(rest)) if (rest[member] === null) delete rest[member];
  // n goes to decodeReply too: a supplier answering more images is answered (and charged) for n.
  return { decoded: { model: body.model, stream: false, bound }, rest: JSON.stringify(rest), meta: { n } };
}

/** The prompt, should a local count ever be asked for (images reserve no tokens, so it changes nothing). */
export function imagesInputText(prepared: Prepared): string {
  return (JSON.parse(prepared.rest) as Body).prompt;
}
