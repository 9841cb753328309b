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
 * Supplier replies longer than this (characters of JSON text: bytes, for the
 * ASCII a reply of numbers or base64 is) are parsed and decoded in the pool.
 * Measured by bench/micro/embeddings-reply.ts (README, Performance): a hop
 * costs the event loop ~20–40 µs; inline decoding costs ~2 µs per KB of
 * base64 and ~5–8 µs per KB of floats, so both pay from ~16 KB on.
 */
export const EMBEDDINGS_REPLY_POOL_BYTES = 16384;

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
