// One attempt's exchange with a supplier, as the undici dispatch handler of its
// request: `head` resolves with the reply's status once its headers are in, and
// the body is then read whole (readAll), as chunks (for await, with
// backpressure), or dropped (dump, discard). undici's own request() does the
// same dispatch through a handler of its own, a Readable stream for the body
// and an AbortSignal listener; measured against a local server, that cost
// ~105 µs of CPU per small reply on this VM against ~60 for this
// (docs/performance.md, "undici's dispatch").
//
// Nothing here throws into undici: every failure is kept and handed to
// whoever reads next.
import type { Dispatcher } from 'undici';
import { CallAborted, type CallAbort } from './abort.js';
import { ReplyCollector, type ReplyBytes } from './reply-limits.js';

/** Unread bytes held for a reader that is behind before the supplier's connection is paused (a Readable's highWaterMark). */
const HIGH_WATER_BYTES = 64 * 1024;
/** A dropped body is read to its end so the connection can be kept, up to this much (as undici's dump); past it the connection goes. */
const DUMP_MAX_BYTES = 128 * 1024;

export interface ReplyHead {
  statusCode: number;
  contentType: string;
  body: ReplyBody;
}

/** What the reader asked for: nothing yet (chunks are queued), the whole body, chunk by chunk, or nothing more. */
type Reading = 'none' | 'whole' | 'chunks' | 'dropped';

interface Waiter {
  resolve: (value: any) => void;
  reject: (err: Error) => void;
}

/** The reader stopped reading chunks before the end (a for-await left early): the connection goes. */
class ReaderStopped extends Error {
  constructor() {
    super('the reader stopped reading the reply');
  }
}

export class ReplyBody implements Dispatcher.DispatchHandler, AsyncIterableIterator<Buffer> {
  readonly head: Promise<ReplyHead>;
  private headWaiter: Waiter | null = null;
  private controller: Dispatcher.DispatchController | null = null;
  private reading: Reading = 'none';
  private readonly queue: Buffer[] = [];
  private queued = 0;
  private dropped = 0;
  private collector: ReplyCollector | null = null;
  /** A reader waiting: for the whole body, the next chunk, or a dump's end. */
  private waiter: Waiter | null = null;
  private ended = false;
  private failure: Error | null = null;

  constructor(private readonly abort: CallAbort) {
    this.head = new Promise<ReplyHead>((resolve, reject) => {
      this.headWaiter = { resolve, reject };
    });
    abort.listen(this.onAbort);
  }

  private readonly onAbort = (): void => {
    this.stop(new CallAborted());
  };

  /** Drops the connection with this reason (nothing happens once the reply has ended). */
  private stop(reason: Error): void {
    if (this.ended) return;
    // Failed first, so whoever waits hears this reason; not started yet, onRequestStart aborts it.
    this.fail(reason);
    this.controller?.abort(reason);
  }

  // ---- undici's side

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.abort.aborted || this.failure !== null) controller.abort(this.failure ?? new CallAborted());
  }

  onResponseStart(_c: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    if (statusCode < 200) return;
    const waiter = this.headWaiter;
    this.headWaiter = null;
    waiter?.resolve({ statusCode, contentType: String(headers['content-type'] ?? ''), body: this });
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    switch (this.reading) {
      case 'whole':
        try {
          this.collector!.push(chunk);
        } catch (err) {
          this.stop(err as Error);
        }
        return;
      case 'dropped':
        this.dropped += chunk.length;
        if (this.dropped > DUMP_MAX_BYTES) this.stop(new ReaderStopped());
        return;
      default:
        if (this.waiter !== null) {
          const waiter = this.waiter;
          this.waiter = null;
          waiter.resolve({ value: chunk, done: false });
          return;
        }
        this.queue.push(chunk);
        this.queued += chunk.length;
        if (this.queued > HIGH_WATER_BYTES) controller.pause();
    }
  }

  onResponseEnd(): void {
    this.ended = true;
    this.abort.unlisten(this.onAbort);
    const waiter = this.waiter;
    if (waiter === null) return;
    this.waiter = null;
    if (this.reading === 'whole') waiter.resolve(this.collector!.finish());
    else waiter.resolve({ value: undefined, done: true });
  }

  onResponseError(_c: Dispatcher.DispatchController, err: Error): void {
    this.fail(err);
  }

  private fail(err: Error): void {
    if (this.ended) return;
    this.ended = true;
    this.failure = err;
    this.abort.unlisten(this.onAbort);
    const head = this.headWaiter;
    this.headWaiter = null;
    head?.reject(err);
    const waiter = this.waiter;
    this.waiter = null;
    // A dump ends either way; the other readers hear why the body did not end.
    if (waiter !== null) this.reading === 'dropped' ? waiter.resolve(undefined) : waiter.reject(err);
  }

  // ---- the reader's side

  /** The whole body's bytes; ReplyTooLarge (the connection dropped) past `maxBytes`. */
  readAll(maxBytes: number): Promise<ReplyBytes> {
    this.reading = 'whole';
    const collector = (this.collector = new ReplyCollector(maxBytes));
    try {
      for (const chunk of this.queue) collector.push(chunk);
    } catch (err) {
      this.stop(err as Error);
      return Promise.reject(err as Error);
    } finally {
      this.unqueue();
    }
    if (this.failure !== null) return Promise.reject(this.failure);
    if (this.ended) return Promise.resolve(collector.finish());
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  /** Reads the rest and drops it, keeping the connection (past DUMP_MAX_BYTES it is dropped instead); never rejects. */
  dump(): Promise<void> {
    this.reading = 'dropped';
    this.unqueue();
    if (this.ended) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  /** Lets go of the rest at once: the connection is dropped unless the reply has ended. */
  discard(): void {
    this.reading = 'dropped';
    this.unqueue();
    this.stop(new ReaderStopped());
  }

  [Symbol.asyncIterator](): this {
    this.reading = 'chunks';
    return this;
  }

  /** The next chunk; what arrived while the reader was busy comes joined as one (as a Readable's read() gives it), so a busy reader writes it to its client once. */
  next(): Promise<IteratorResult<Buffer>> {
    if (this.queue.length > 0) {
      const chunk = this.queue.length === 1 ? this.queue[0]! : Buffer.concat(this.queue, this.queued);
      this.unqueue();
      return Promise.resolve({ value: chunk, done: false });
    }
    if (this.failure !== null) return Promise.reject(this.failure);
    if (this.ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  /** A for-await left before the end (break, or a throw in its body): the rest is not wanted. */
  return(): Promise<IteratorResult<Buffer>> {
    this.discard();
    return Promise.resolve({ value: undefined, done: true });
  }

  /** Empties the queue in place (no new array per chunk a busy reader takes). */
  private unqueue(): void {
    this.queue.length = 0;
    this.queued = 0;
    // A stopped or finished reply has nothing left to resume.
    if (!this.ended && this.controller?.paused === true) this.controller.resume();
  }
}
