// One request's state, the event hub, and the unary ways of answering.
//
// uWS rules kept here: onAborted is attached before anything asynchronous;
// `res` is never touched once the exchange is no longer OPEN; every write
// after a timer or callback goes through res.cork.
import type { HttpResponse } from '../server/uws.js';
import type { Directives } from './directives.js';
import { errorBody, simulatedMessage, statusLine, type Dialect } from './errors.js';
import type { StreamSource } from './sse.js';
import type { Protocol, SimulatorEvent, SimulatorListener } from './types.js';

export const OPEN = 0;
export const DONE = 1;
export const ABORTED = 2;

const JSON_TYPE = 'application/json';

/** Request counts and event listeners shared by every exchange of a server. */
export class Hub {
  listeners: SimulatorListener[] = [];
  readonly counts = new Map<string, number>();
  total = 0;
  closing = false;

  constructor(instances: readonly string[]) {
    for (const name of instances) this.counts.set(name, 0);
  }

  emit(type: SimulatorEvent['type'], ex: Exchange, body?: string): void {
    // Listeners are replaced, never mutated, so this loop survives an
    // unsubscribe from inside a listener.
    const ls = this.listeners;
    if (ls.length === 0 || this.closing || !ex.counted) return;
    const e: SimulatorEvent = { type, instance: ex.instance, protocol: ex.protocol, stream: ex.stream, at: performance.now() };
    if (body !== undefined) e.body = body;
    if (ex.traceparent !== '') e.traceparent = ex.traceparent;
    for (let i = 0; i < ls.length; i++) (ls[i] as SimulatorListener)(e);
  }
}

export class Exchange {
  state = OPEN;
  /** The W3C trace context the gateway sent ('' when none), for tests of trace propagation. */
  traceparent = '';
  stream = false;
  /** The connection is closed (onAborted ran); `res` must not be touched. */
  gone = false;
  /** Set once the request is counted: events are only told about counted requests. */
  counted = false;
  timer: ReturnType<typeof setTimeout> | null = null;
  // Streaming progress (see sse.ts).
  source: StreamSource | null = null;
  next = 0;
  limit = 0;
  drop = false;
  delayMs = 0;
  /** Content chunks before delayMs applies ([sim:delay_after]). */
  delayAfter = 0;
  started = false;
  waiting = false;
  /** Filler bytes still to send ([sim:flood]). */
  flood = 0;

  constructor(
    readonly hub: Hub,
    readonly res: HttpResponse,
    readonly instance: string,
    readonly protocol: Protocol,
    readonly dialect: Dialect,
  ) {}

  /** The client went away (or the server is closing). */
  aborted(): void {
    this.gone = true;
    if (this.state !== OPEN) return;
    this.state = ABORTED;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.hub.emit('aborted', this);
  }

  /** Marks the answer complete; call right after the last write. */
  finished(): void {
    this.state = DONE;
    this.hub.emit('finished', this);
  }

  /** Closes the connection mid-answer on purpose ([sim:fail_after]). */
  dropConnection(): void {
    this.finished();
    // Deferred: inside a uWS callback the socket is corked, and closing it
    // there would discard the chunks just written instead of sending them.
    setImmediate(closeNow, this);
  }

  /** Answers with a complete JSON body now. */
  sendJson(status: number, body: string | Buffer): void {
    if (this.state !== OPEN) return;
    if (body.length > SLICE_BYTES) {
      sendSliced(this, status, typeof body === 'string' ? Buffer.from(body, 'utf8') : body);
      return;
    }
    const res = this.res;
    res.cork(() => {
      res.writeStatus(statusLine(status)).writeHeader('content-type', JSON_TYPE);
      if (status === 429) res.writeHeader('retry-after', '1');
      res.end(body);
    });
    this.finished();
  }

  /** Refuses the request in this route's error envelope, now. */
  fail(status: number, message: string): void {
    this.sendJson(status, errorBody(this.dialect, status, message));
  }

  /** Answers `body` (200) honouring delay_ms, fail_after and status. */
  answer(body: string | Buffer, d: Directives): void {
    if (d.delayMs > 0) this.timer = setTimeout(deliver, d.delayMs, this, body, d);
    else deliver(this, body, d);
  }

  /** Fails with the status a [sim:status] directive asked for, after any delay. */
  simulateError(d: Directives): void {
    this.answer(errorBody(this.dialect, d.status, simulatedMessage(d.status)), d);
  }
}

const SLICE_BYTES = 256 * 1024;

/**
 * A large body in slices of SLICE_BYTES, one per event-loop task, resumed by
 * onWritable when the socket pushes back. One `end()` of a 128 × 3072 float
 * embeddings reply (8.4 MB) held this loop for milliseconds, and every small
 * answer behind it waited: the bench measured that wait as the gateway's
 * (issue 33's floor, `direct` beside embeddings). A real supplier's big
 * answer does not hold up its other answers.
 */
function sendSliced(ex: Exchange, status: number, body: Buffer): void {
  const res = ex.res;
  const total = body.length;
  let blocked = false;
  // Writes the slice at `offset`; answers whether the socket took it all.
  const write = (offset: number): boolean => {
    const [ok, responded] = res.tryEnd(body.subarray(offset, offset + SLICE_BYTES), total);
    if (responded) ex.finished();
    return ok;
  };
  const next = (): void => {
    if (ex.state !== OPEN || blocked) return;
    let ok = false;
    res.cork(() => {
      ok = write(res.getWriteOffset());
    });
    if (ex.state !== OPEN) return;
    if (ok) setImmediate(next);
    else blocked = true;
  };
  let ok = false;
  res.cork(() => {
    res.writeStatus(statusLine(status)).writeHeader('content-type', JSON_TYPE);
    ok = write(0);
  });
  if (ex.state !== OPEN) return;
  res.onWritable((offset) => {
    if (ex.state !== OPEN) return true;
    let taken = false;
    res.cork(() => {
      taken = write(offset);
    });
    if (!taken) return false;
    blocked = false;
    if (ex.state === OPEN) setImmediate(next);
    return true;
  });
  if (ok) setImmediate(next);
  else blocked = true;
}

function closeNow(ex: Exchange): void {
  // close() runs onAborted synchronously; the state is no longer OPEN so it is ignored.
  if (!ex.gone) ex.res.close();
}

function deliver(ex: Exchange, body: string | Buffer, d: Directives): void {
  ex.timer = null;
  if (ex.state !== OPEN) return;
  if (d.status !== 0) {
    ex.sendJson(d.status, body);
    return;
  }
  if (d.flood > 0) {
    // Trailing whitespace keeps the reply valid JSON, just very large.
    ex.flood = d.flood;
    ex.res.cork(() => ex.res.writeStatus('200 OK').writeHeader('content-type', JSON_TYPE).write(body));
    flood(ex, ' ', endNow);
    return;
  }
  if (d.failAfter < 0) {
    ex.sendJson(200, body);
    return;
  }
  const res = ex.res;
  // Half a body in chunked encoding, then no terminating chunk: the client
  // sees a truncated response, as when a supplier dies mid-reply.
  res.cork(() => {
    res.writeStatus('200 OK').writeHeader('content-type', JSON_TYPE);
    res.write(body.slice(0, body.length >> 1));
  });
  ex.dropConnection();
}

const FLOOD_BLOCK = 64 * 1024;

/**
 * Sends `ex.flood` bytes of `fill` (one character, never a newline) as fast
 * as the socket takes them, waiting on onWritable when it pushes back, then
 * calls `then`. The status line and headers must already be written.
 */
export function flood(ex: Exchange, fill: string, then: (ex: Exchange) => void): void {
  if (ex.state !== OPEN) return;
  const block = fill.repeat(FLOOD_BLOCK);
  const res = ex.res;
  const step = (): boolean => {
    if (ex.state !== OPEN || ex.flood === 0) return true;
    let ok = true;
    res.cork(() => {
      while (ok && ex.flood > 0) {
        const n = Math.min(FLOOD_BLOCK, ex.flood);
        ex.flood -= n;
        ok = res.write(n === FLOOD_BLOCK ? block : block.slice(0, n));
      }
    });
    if (ex.flood === 0) then(ex);
    return true;
  };
  res.onWritable(step);
  step();
}

function endNow(ex: Exchange): void {
  ex.res.cork(() => ex.res.end());
  ex.finished();
}
