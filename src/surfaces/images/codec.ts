// Image generation, served natively: the caller's body goes to images
// suppliers with only the upstream model name set; the reply comes back as
// the gateway's own ImagesResponseBody. Billed per image unit: n reserved,
// the images returned (at most n) settled. No streaming on this surface.
import type { Route } from '../../catalog/types.js';
import { REPLY_POOL_BYTES } from '../reply-pool.js';
import type { ModelSurface, Prepared } from '../surface.js';
import { imagesInputText, prepareImages } from './prepare.js';
import { decodeReply, meterReply, renderReply, type DecodedImages } from './reply.js';

/** Edits and variations are not served (spec, "What the service does" 7): 404 in the images envelope (surfaces/index.ts). */
export const UNSERVED_IMAGE_PATHS = ['/v1/images/edits', '/v1/images/variations'] as const;

/** A request the demo catalog answers (README; the registry test sends it with a long text). */
export const imagesExample = (text: string): object => ({ model: 'canvas', prompt: text, n: 1 });

function upstreamBody(prepared: Prepared, route: Route): string {
  return '{"model":' + JSON.stringify(route.upstreamModel) + ',' + prepared.rest.slice(1);
}

export const imagesCodec: ModelSurface<DecodedImages> = {
  protocol: 'images',
  path: '/v1/images/generations',
  envelope: 'images',
  carrier: 'bearer',
  modality: 'image_generation',
  prepare: prepareImages,
  upstreamBody,
  inputText: imagesInputText,
  decodeReply,
  replyPoolBytes: REPLY_POOL_BYTES,
  fetchInPool: true,
  meter: meterReply,
  render: renderReply,
};
