// Embeddings, served natively: the caller's body (encoding_format already
// base64) goes to embeddings suppliers with only the upstream model name set;
// the reply comes back as the gateway's own object (the model as the caller
// named it, the usage as settled). No streaming on this surface.
import type { Route } from '../../catalog/types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { CallInfo, Prepared, StreamTranscoder, SurfaceCodec, UnaryResult } from '../surface.js';
import { embeddingsInputText, prepareEmbeddings } from './prepare.js';
import { decodeReply, renderReply, replyMetered, type DecodedEmbeddings } from './reply.js';

/**
 * Supplier replies above this many bytes are parsed and decoded in the pool
 * (README, Performance: measured by bench/micro/embeddings-reply.ts). Below
 * it, the hop costs the event loop more than the work it moves.
 */
export const EMBEDDINGS_REPLY_POOL_BYTES = 131072;

function upstreamBody(prepared: Prepared, route: Route): string {
  return '{"model":' + JSON.stringify(route.upstreamModel) + ',' + prepared.rest.slice(1);
}

function result(reply: DecodedEmbeddings, call: CallInfo): UnaryResult {
  return {
    metered: replyMetered(reply),
    outcome: 'completed',
    // No text is produced: a local count (no supplier usage) counts the input alone.
    producedText: '',
    render: (settled) => renderReply(reply, call, settled),
  };
}

export const embeddingsCodec: SurfaceCodec = {
  protocol: 'embeddings',
  path: '/v1/embeddings',
  envelope: 'embeddings',
  carrier: 'bearer',
  modality: 'embeddings',
  prepare: prepareEmbeddings,
  upstreamBody,
  inputText: embeddingsInputText,
  unary: (upstream, call) => result(decodeReply(upstream), call),
  replyInPool: { minBytes: EMBEDDINGS_REPLY_POOL_BYTES, result: (decoded, call) => result(decoded as DecodedEmbeddings, call) },
  // prepare() never sets stream (the schema has no such member).
  stream: (): StreamTranscoder => {
    throw new GatewayError('internal_error');
  },
};
