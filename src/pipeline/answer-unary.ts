// A whole (non-streamed) answer: read the supplier's reply, settle, then send
// the surface's own reply with the usage as settled. A reply over
// suppliers.max_reply_bytes is a supplier failure (502), read no further.
import { GatewayError } from '../errors/gateway-error.js';
import { sendJson } from '../server/respond.js';
import type { UpstreamReply } from '../suppliers/dispatch.js';
import { readReplyBytes, ReplyTooLarge } from '../suppliers/reply-limits.js';
import type { UnaryResult } from '../surfaces/surface.js';
import type { ModelCall } from './call.js';
import { localCount, settle } from './settle.js';
import { refusalFromSupplier } from './upstream.js';

export async function answerUnary(call: ModelCall, upstream: UpstreamReply): Promise<void> {
  let bytes: Buffer;
  try {
    bytes = await readReplyBytes(upstream.body, call.deps.suppliers.maxReplyBytes);
  } catch (err) {
    if (err instanceof ReplyTooLarge) call.deps.suppliers.replyTooLarge(upstream.route, err.limit);
    // The client left (cancelled) or the supplier dropped mid-body: nothing reached the client.
    await settle(call, null, call.ctx.aborted ? 'cancelled' : 'failed');
    if (call.ctx.aborted) return;
    throw new GatewayError('upstream_error');
  }
  if (upstream.statusCode >= 400) {
    await settle(call, null, 'failed');
    throw refusalFromSupplier(upstream.statusCode);
  }
  const result = await decodeUnary(call, bytes);
  const metered = result.metered ?? (await localCount(call, result.producedText));
  // A unary reply's first byte is its whole body: ready now.
  call.firstByteMs = performance.now() - call.ctx.startedAt;
  await settle(call, metered, result.outcome);
  sendJson(call.ctx, 200, result.render(metered));
}

/**
 * The supplier's reply decoded by the surface: on the event loop, or in the
 * pool when the surface asks for it (`replyInPool`) and the reply is larger
 * than its threshold (embeddings answered as float arrays).
 */
async function decodeUnary(call: ModelCall, bytes: Buffer): Promise<UnaryResult> {
  const inPool = call.surface.replyInPool;
  if (inPool !== undefined && bytes.length > inPool.minBytes) {
    // The bytes are moved to the thread, which decodes them to text itself: no string is built or cloned here.
    const decoded = await call.deps.offload.decodeReply(call.surface.protocol, bytes);
    if (decoded.ok) return inPool.result(decoded.decoded, call.info());
  } else {
    let parsed: unknown;
    try {
      parsed = JSON.parse(bytes.toString('utf8'));
    } catch {
      parsed = undefined;
    }
    if (parsed !== undefined) return call.surface.unary(parsed, call.info());
  }
  await settle(call, null, 'failed');
  throw new GatewayError('upstream_error');
}
