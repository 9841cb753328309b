// piscina task: parse and decode a large supplier reply off the event loop,
// for any surface (embeddings answered as float arrays: ~8 MB of JSON for
// 128 × 3072 dimensions; images: megabytes of base64). The HTTP worker hands
// over the reply's bytes (transferred, not copied: no string is built on the
// event loop) and gets back the surface decoder's plain data (embeddings and
// images: the `data` array already written as JSON text), or that the reply
// was broken. Measured by bench/micro/embeddings-reply.ts and
// bench/micro/image-reply.ts.
import { GatewayError } from '../src/errors/gateway-error.js';
import { modelCallNamed } from '../src/surfaces/index.js';
import type { DecodeReplyResult, RequestFacts } from '../src/surfaces/surface.js';
import './thread-priority.js';

export interface DecodeReplyTask {
  /** The surface's registry name (src/surfaces/index.ts). */
  surface: string;
  body: Uint8Array;
  /** The request's facts (Prepared.meta), which decoding may need (images: n). */
  meta: RequestFacts;
}

const decoder = new TextDecoder();

export default function decodeReply(task: DecodeReplyTask): DecodeReplyResult {
  try {
    return { ok: true, decoded: modelCallNamed(task.surface).decodeReply(JSON.parse(decoder.decode(task.body)), task.meta) };
  } catch (err) {
    // Not JSON, or not the protocol's reply: the same upstream_error the inline path gives.
    if (err instanceof SyntaxError || (err instanceof GatewayError && err.code === 'upstream_error')) return { ok: false };
    throw err;
  }
}
