// Image generation, served natively: the caller's body goes to images
// suppliers with only the upstream model name set; the reply comes back as
// the gateway's own ImagesResponseBody. Billed per image unit: n reserved,
// the images returned settled. No streaming on this surface.
import type { Route } from '../../catalog/types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { Prepared, StreamTranscoder, SurfaceCodec } from '../surface.js';
import { imagesInputText, prepareImages } from './prepare.js';
import { decodeReply, renderReply, replyMetered } from './reply.js';

function upstreamBody(prepared: Prepared, route: Route): string {
  return '{"model":' + JSON.stringify(route.upstreamModel) + ',' + prepared.rest.slice(1);
}

export const imagesCodec: SurfaceCodec = {
  protocol: 'images',
  path: '/v1/images/generations',
  envelope: 'images',
  carrier: 'bearer',
  modality: 'image_generation',
  prepare: prepareImages,
  upstreamBody,
  inputText: imagesInputText,
  unary(upstream, call) {
    const reply = decodeReply(upstream);
    return {
      metered: replyMetered(reply),
      // A supplier that returned fewer images than asked still answered: the units returned are settled.
      outcome: 'completed',
      producedText: '',
      render: () => renderReply(reply, call),
    };
  },
  // prepare() never sets stream (the schema has no such member).
  stream: (): StreamTranscoder => {
    throw new GatewayError('internal_error');
  },
};
