// Embeddings, served natively: the caller's body (encoding_format already
// base64) goes to embeddings suppliers with only the upstream model name set;
// the reply comes back as the gateway's own object (the model as the caller
// named it, the usage as settled). No streaming on this surface. A reply of
// float arrays is large (~8 MB of JSON for 128 × 3072): decoded in the pool
// past REPLY_POOL_BYTES like every surface's, from its bytes (reply-bytes.ts).
import type { Route } from '../../catalog/types.js';
import { REPLY_POOL_BYTES } from '../reply-pool.js';
import type { ModelSurface, Prepared } from '../surface.js';
import { embeddingsInputText, prepareEmbeddings } from './prepare.js';
import { decodeReply, meterReply, renderReply, type DecodedEmbeddings } from './reply.js';
import { decodeReplyBytes } from './reply-bytes.js';

/** A request the demo catalog answers (README; the registry test sends it with a long text). */
export const embeddingsExample = (text: string): object => ({ model: 'embed', encoding_format: 'base64', input: [text] });

function upstreamBody(prepared: Prepared, route: Route): string {
  return '{"model":' + JSON.stringify(route.upstreamModel) + ',' + prepared.rest.slice(1);
}

export const embeddingsCodec: ModelSurface<DecodedEmbeddings> = {
  protocol: 'embeddings',
  path: '/v1/embeddings',
  envelope: 'embeddings',
  carrier: 'bearer',
  modality: 'embeddings',
  prepare: prepareEmbeddings,
  upstreamBody,
  inputText: embeddingsInputText,
  decodeReply,
  decodeReplyBytes,
  replyPoolBytes: REPLY_POOL_BYTES,
  fetchInPool: true,
  meter: meterReply,
  render: renderReply,
};
