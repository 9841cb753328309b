// piscina task: parse and decode a large supplier reply off the event loop
// (embeddings answered as float arrays: ~8 MB of JSON for 128 × 3072
// dimensions). The HTTP worker hands over the reply's bytes (transferred, not
// copied: no string is built on the event loop) and gets back the
// surface decoder's plain data (for embeddings: the `data` array already
// written as base64 JSON text), or that the reply was broken. Measured by
// bench/micro/embeddings-reply.ts.
import type { ProtocolCode } from '../src/catalog/types.js';
import { GatewayError } from '../src/errors/gateway-error.js';
import { REPLY_DECODERS } from '../src/surfaces/preparers.js';
import type { DecodeReplyResult } from '../src/surfaces/surface.js';
import './thread-priority.js';

export interface DecodeReplyTask {
  protocol: ProtocolCode;
  body: Uint8Array;
}

const decoder = new TextDecoder();

export default function decodeReply(task: DecodeReplyTask): DecodeReplyResult {
  try {
    return { ok: true, decoded: REPLY_DECODERS[task.protocol]!(JSON.parse(decoder.decode(task.body))) };
  } catch (err) {
    // Not JSON, or not the protocol's reply: the same upstream_error the inline path gives.
    if (err instanceof SyntaxError || (err instanceof GatewayError && err.code === 'upstream_error')) return { ok: false };
    throw err;
  }
}
