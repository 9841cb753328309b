// A whole (non-streamed) answer: read the supplier's reply, decode it (in the
// pool when it is large; for surfaces whose replies are megabytes a pool
// thread has already read and decoded it: upstream.read), meter it, settle,
// then send the surface's own reply with the usage as settled. A reply over
// suppliers.max_reply_bytes is a supplier failure (502), read no further.
import { GatewayError } from '../errors/gateway-error.js';
import { sendJson, sendJsonParts } from '../server/respond.js';
import type { ReadReply, UpstreamReply } from '../suppliers/dispatch.js';
import { recycleBlocks, ReplyTooLarge, replyText, type ReplyBytes } from '../suppliers/reply-limits.js';
import type { ModelCall } from './call.js';
import { localCount, meterCancelled, settle } from './settle.js';
import { refusalFromSupplier, UnusableReply } from './upstream.js';

export async function answerUnary(call: ModelCall, upstream: UpstreamReply): Promise<void> {
  const surface = call.surface;
  const reply = upstream.read !== null ? await decodedElsewhere(call, upstream, upstream.read) : await readAndDecode(call, upstream);
  if (reply === CLIENT_GONE) return;
  const meter = surface.meter(reply);
  if (meter.warning !== null) call.deps.logger.warn({ rid: call.ctx.requestId, surface: call.name, supplier: call.supplier }, meter.warning);
  const metered = meter.usage ?? (await localCount(call, meter.producedText, meter.imageUnits));
  // A unary reply's first byte is its whole body: ready now.
  call.firstByteMs = performance.now() - call.ctx.startedAt;
  await settle(call, metered, meter.outcome);
  const info = call.info();
  surface.answered?.(info, call.deps.services);
  const body = surface.render(reply, info, metered);
  if (typeof body === 'string') sendJson(call.ctx, 200, body);
  // Once written, a large answer's buffer goes back to the pool for its next answer (offload/spare-answers.ts: no garbage here).
  else sendJsonParts(call.ctx, 200, body, undefined, () => call.deps.offload.answerWritten(reply));
}

/** The reply read here, then decoded here or in the pool. */
async function readAndDecode(call: ModelCall, upstream: UpstreamReply): Promise<unknown> {
  let bytes: ReplyBytes;
  try {
    bytes = await upstream.body!.readAll(call.deps.suppliers.maxReplyBytes);
  } catch (err) {
    if (err instanceof ReplyTooLarge) call.deps.suppliers.replyTooLarge(upstream.route, err.limit);
    return bodyFailed(call);
  }
  if (upstream.statusCode >= 400) return refused(call, upstream.statusCode);
  try {
    return await decodeReply(call, bytes);
  } catch (err) {
    // Not the protocol's reply, and nothing has reached the client: the next route may answer (run.ts).
    if (err instanceof GatewayError && err.code === 'upstream_error') throw new UnusableReply();
    throw err;
  }
}

/** The reply as a pool thread read and decoded it (surface.fetchInPool): the same outcomes, none of the bytes on this thread. */
async function decodedElsewhere(call: ModelCall, upstream: UpstreamReply, read: ReadReply): Promise<unknown> {
  if (read.read === 'too_large') call.deps.suppliers.replyTooLarge(upstream.route, read.limit);
  if (read.read !== 'whole') return bodyFailed(call);
  if (upstream.statusCode >= 400) return refused(call, upstream.statusCode);
  if (!read.ok) throw new UnusableReply();
  return read.decoded;
}

/** The client left before the reply was read whole: the call is settled, and nobody is there to answer. */
const CLIENT_GONE = Symbol('client gone');

/**
 * The body could not be read whole: the client left (cancelled: charged its
 * input, settle.ts meterCancelled), or the supplier dropped, stalled or
 * overran mid-body (failed, nothing charged). Nothing reached the client.
 */
async function bodyFailed(call: ModelCall): Promise<typeof CLIENT_GONE> {
  if (call.ctx.aborted) {
    await settle(call, await meterCancelled(call, null, ''), 'cancelled');
    return CLIENT_GONE;
  }
  await settle(call, null, 'failed');
  throw new GatewayError('upstream_error');
}

async function refused(call: ModelCall, statusCode: number): Promise<never> {
  await settle(call, null, 'failed');
  throw refusalFromSupplier(statusCode);
}

/**
 * The supplier's reply decoded by the surface: on the event loop, or in the
 * pool when it is longer than the surface's replyPoolBytes (an embeddings
 * batch of floats, images of megabytes of base64). Not JSON, or not the
 * protocol's reply: upstream_error (run.ts settles the call as failed).
 */
async function decodeReply(call: ModelCall, bytes: ReplyBytes): Promise<unknown> {
  const meta = call.prepared!.meta;
  if (bytes.length > call.surface.replyPoolBytes) {
    // The bytes are moved to the thread, which decodes them to text itself: no string is built or cloned here.
    const decoded = await call.deps.offload.decodeReply(call.name, bytes, meta, call.key!.orgId);
    if (decoded.spent !== undefined) recycleBlocks(decoded.spent);
    if (!decoded.ok) throw new GatewayError('upstream_error');
    return decoded.decoded;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(replyText(bytes));
  } catch {
    throw new GatewayError('upstream_error');
  }
  return call.surface.decodeReply(parsed, meta);
}
