// A streamed answer: upstream SSE events are parsed once, re-encoded by the
// surface's transcoder and written with backpressure. Settlement happens
// before the terminal frames, so the final usage is the settled one.
// - The supplier fails before the first frame reaches the client (a 2xx that
//   is not an event stream, breaks, stalls or ends before its first event):
//   the next route is tried (run.ts); none left, an ordinary JSON error.
// - It fails after: the surface's in-stream failure (messages: error event;
//   responses: response.failed; chat: the stream is cut, no [DONE]), and the
//   hold is settled for what was produced.
// - The client leaves: the upstream request is aborted and the hold settled
//   for the input and what was delivered (outcome cancelled, settle.ts meterCancelled).
// - The client stays behind for http.stalled_client_ms (see SseWriter): the
//   gateway cuts it and goes on as if it had left.
// - An event over suppliers.max_event_bytes: a supplier failure as above,
//   except that before the first frame it is a 502, never tried elsewhere.
import { GatewayError } from '../errors/gateway-error.js';
import { SseWriter } from '../server/sse.js';
import type { UpstreamReply } from '../suppliers/dispatch.js';
import { ReplyTooLarge } from '../suppliers/reply-limits.js';
import { SseReader, type SseEvent } from '../suppliers/sse-reader.js';
import type { StreamTranscoder } from '../surfaces/surface.js';
import type { ModelCall } from './call.js';
import { localCount, meterCancelled, meterPartial, settle } from './settle.js';
import { refusalFromSupplier, UnusableReply } from './upstream.js';

export async function answerStream(call: ModelCall, upstream: UpstreamReply): Promise<void> {
  const ctx = call.ctx;
  // A stream's body is always read here: no transport that reads bodies itself is used for streams (upstream.ts).
  const body = upstream.body!;
  if (upstream.statusCode >= 400) {
    await body.dump().catch(() => {});
    await settle(call, null, 'failed');
    throw refusalFromSupplier(upstream.statusCode);
  }
  if (!upstream.contentType.startsWith('text/event-stream')) {
    body.discard();
    throw new UnusableReply();
  }
  const transcoder = call.surface.stream!(call.info(), call.prepared!, call.deps.services);
  const reader = new SseReader(call.deps.suppliers.maxEventBytes);
  const writer = new SseWriter(ctx, call.deps.stalledClientMs);
  let broken = false;
  let tooLarge = false;
  try {
    for await (const chunk of body) {
      const frames = framesOf(reader.push(chunk), transcoder, writer);
      if (frames !== '' && !writer.write(frames) && !(await writer.writable())) {
        call.deps.logger.info({ rid: ctx.requestId, stalledMs: call.deps.stalledClientMs }, 'client stopped reading the stream; cancelled');
        // Closing runs the abort handler at once: ctx.aborted is set below.
        writer.cut();
      }
      if (ctx.aborted) break;
      // Progress is what was delivered: nothing before the first frame (the call may still fail over).
      if (writer.firstByteAt !== null) call.deps.billing.progress(call.hold, transcoder, call.supplier);
    }
    const tail = reader.flush();
    if (tail !== null && !ctx.aborted) {
      const frames = transcoder.event(tail);
      if (frames !== '') writer.write(frames);
    }
  } catch (err) {
    broken = true;
    if (err instanceof ReplyTooLarge) {
      tooLarge = true;
      call.deps.suppliers.replyTooLarge(upstream.route, err.limit);
    }
  }
  call.firstByteMs = writer.firstByteAt;

  if (ctx.aborted) {
    call.abort.abort();
    await settle(call, await meterCancelled(call, transcoder.metered(), transcoder.producedText()), 'cancelled');
    return;
  }
  if (broken || !transcoder.complete) {
    if (!ctx.responded) {
      body.discard();
      // An event over its bound is not retried: the supplier did (and billed) the work, and a caller
      // who can draw such replies must not be able to open a supplier's circuit (dispatch.ts replyTooLarge).
      if (tooLarge) {
        await settle(call, null, 'failed');
        throw new GatewayError('upstream_error');
      }
      // Nothing reached the client: the next route may answer (run.ts settles if none does).
      throw new UnusableReply();
    }
    await settle(call, await meterPartial(call, transcoder.metered(), transcoder.producedText()), 'incomplete');
    const failure = transcoder.failure();
    if (failure === '') writer.cut();
    else writer.end(failure);
    return;
  }
  const metered = transcoder.metered() ?? (await localCount(call, transcoder.producedText(), call.hold!.bound.imageUnits));
  await settle(call, metered, transcoder.outcome());
  call.surface.answered?.(call.info(), call.deps.services);
  writer.end(transcoder.finish(metered));
}

/**
 * One upstream read's events as frames, to be written by the caller with
 * backpressure. The stream's first frame goes out here as soon as it is made:
 * a burst of events in one read (a fast or cached reply) would otherwise hold
 * the first byte until the whole burst is transcoded. A socket already backed
 * up on that frame is waited for at the caller's next write.
 */
export function framesOf(events: readonly SseEvent[], transcoder: Pick<StreamTranscoder, 'event'>, writer: Pick<SseWriter, 'firstByteAt' | 'write'>): string {
  let frames = '';
  for (const ev of events) {
    frames += transcoder.event(ev);
    if (writer.firstByteAt === null && frames !== '') {
      writer.write(frames);
      frames = '';
    }
  }
  return frames;
}
