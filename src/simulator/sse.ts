// Drives a server-sent-events answer: headers and opening frames, then one
// content chunk per step, then the closing frames.
//
// Timing: the opening frames go out together with the first content chunk,
// so with [sim:delay_ms=D] the first token arrives after D and every later
// one D after the previous. Without a delay every chunk is written in one
// cork until the socket pushes back. A false return from res.write pauses
// until onWritable. [sim:delay_after=N] sends the first N chunks with no
// delay, then D apart: buffers fill at once, and the answer is still far
// from its end (a client that stops reading is cut mid-answer, whatever the
// socket buffers between the two hold).
import type { Directives } from './directives.js';
import { flood, OPEN, type Exchange } from './exchange.js';

/** What one streamed answer consists of; chunk(i) is built only when sent. */
export interface StreamSource {
  /** Frames before the first content chunk. */
  head(): string;
  /** Number of content chunks (words or argument fragments). */
  readonly count: number;
  chunk(i: number): string;
  /** Frames after the last content chunk. */
  tail(): string;
}

const SSE_TYPE = 'text/event-stream; charset=utf-8';

/** `event: NAME\ndata: ` — the prefix of a named SSE frame. */
export function eventPrefix(name: string): string {
  return `event: ${name}\ndata: `;
}

export function startStream(ex: Exchange, source: StreamSource, d: Directives): void {
  ex.source = source;
  ex.flood = d.flood;
  if (d.flood > 0 && d.failAfter < 0) {
    // [sim:flood] alone: no event at all, only filler from the first byte.
    ex.started = true;
    ex.res.cork(() => openStream(ex));
    floodThenDrop(ex);
    return;
  }
  ex.drop = d.failAfter >= 0;
  ex.limit = ex.drop ? Math.min(d.failAfter, source.count) : source.count;
  ex.delayMs = d.delayMs;
  ex.delayAfter = d.delayAfter;
  const first = pause(ex);
  if (first > 0) ex.timer = setTimeout(pump, first, ex);
  else pump(ex);
}

/** The wait before the next content chunk: delay_ms once delay_after chunks have gone out. */
function pause(ex: Exchange): number {
  return ex.next >= ex.delayAfter ? ex.delayMs : 0;
}

function pump(ex: Exchange): void {
  ex.timer = null;
  if (ex.state !== OPEN) return;
  const res = ex.res;
  const source = ex.source as StreamSource;
  let ok = true;
  let ended = false;
  res.cork(() => {
    if (!ex.started) {
      ex.started = true;
      openStream(ex);
      ok = res.write(source.head());
    }
    while (ex.next < ex.limit) {
      ok = res.write(source.chunk(ex.next++)) && ok;
      if (!ok || pause(ex) > 0) break;
    }
    if (ex.next >= ex.limit && !ex.drop) {
      // end() buffers whatever the socket cannot take yet, so it needs no wait.
      res.end(source.tail());
      ended = true;
    }
  });
  if (ended) {
    ex.finished();
    return;
  }
  if (!ok) {
    waitWritable(ex);
    return;
  }
  if (ex.next >= ex.limit) drop(ex);
  else ex.timer = setTimeout(pump, pause(ex), ex);
}

function openStream(ex: Exchange): void {
  ex.res.writeStatus('200 OK').writeHeader('content-type', SSE_TYPE).writeHeader('cache-control', 'no-cache');
}

/**
 * Where [sim:fail_after] breaks the stream: the connection drops, after any
 * [sim:flood] filler. The filler starts on the next turn: it registers its
 * own onWritable, which must not replace a handler while that one runs.
 */
function drop(ex: Exchange): void {
  if (ex.flood > 0) setImmediate(floodThenDrop, ex);
  else ex.dropConnection();
}

function floodThenDrop(ex: Exchange): void {
  flood(ex, 'x', drop);
}

function waitWritable(ex: Exchange): void {
  ex.waiting = true;
  // The handler stays registered; `waiting` keeps a later writable event from
  // starting a second pump alongside a pending timer.
  ex.res.onWritable(() => {
    if (!ex.waiting || ex.state !== OPEN) return true;
    ex.waiting = false;
    if (ex.next >= ex.limit) drop(ex);
    else if (pause(ex) > 0) ex.timer = setTimeout(pump, pause(ex), ex);
    else pump(ex);
    return true;
  });
}
