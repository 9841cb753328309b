// Where log lines go: standard output, written by the event loop itself, the
// lines of LINGER_MS (or FLUSH_CHARS of them, if that comes first) in one
// write(2). pino's asynchronous destination hands every line to a libuv
// thread (fs.write), which wakes that thread and then the loop again for its
// completion: at a low request rate that is two context switches per request
// log line, on a VM the dearest thing a request does (docs/performance.md,
// "Wake-ups per call"). Until 2026-11-27 the lines of one event-loop turn
// left together; at one call at a time that was still one write(2) per call
// (~20 µs of the worker's CPU here), now one per LINGER_MS whatever the rate.
// The lines wait off the request's path: a line is queued once its answer has
// gone. A destination that cannot take them now (EAGAIN: a full pipe) gets
// them by an asynchronous write, never by a sleep on the event loop; past
// MAX_BACKLOG_CHARS lines are dropped and counted rather than held without
// bound.
import { write as writeAsync, writeSync } from 'node:fs';

/** What may wait for a slow destination: beyond it lines are dropped (and counted in the next line that gets through). */
const MAX_BACKLOG_CHARS = 16 * 1024 * 1024;
/** The longest a line waits for the ones after it (a crash loses at most this much of the log). */
export const LINGER_MS = 10;
/** Past this many characters waiting, they leave at the end of this turn. */
const FLUSH_CHARS = 64 * 1024;

export class LineWriter {
  private pending = '';
  /** A write is due: at the end of this turn (past FLUSH_CHARS), or when the linger timer fires. */
  private timer: NodeJS.Timeout | null = null;
  private immediate = false;
  /** An asynchronous write is in flight: the destination was full; nothing else is written until it returns. */
  private waiting = false;
  private dropped = 0;
  private flushedCallbacks: Array<(err?: Error) => void> = [];

  constructor(private readonly fd: number) {}

  /** pino's stream interface: one serialized line, newline included. */
  write(line: string): boolean {
    if (this.pending.length > MAX_BACKLOG_CHARS) {
      this.dropped++;
      return false;
    }
    this.pending += line;
    if (this.waiting || this.immediate) return true;
    if (this.pending.length >= FLUSH_CHARS) {
      this.immediate = true;
      setImmediate(this.flushTurn);
    } else if (this.timer === null) this.timer = setTimeout(this.flushTurn, LINGER_MS);
    return true;
  }

  /** pino's logger.flush(cb): everything queued written, or given up on if the destination fails. */
  flush(cb?: (err?: Error) => void): void {
    if (cb !== undefined) this.flushedCallbacks.push(cb);
    if (!this.waiting) this.flushTurn();
  }

  private readonly flushTurn = (): void => {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.immediate = false;
    if (this.waiting) return;
    if (this.dropped > 0) {
      this.pending += `{"level":40,"time":${Date.now()},"pid":${process.pid},"msg":"log: ${this.dropped} lines dropped, standard output was not taking them"}\n`;
      this.dropped = 0;
    }
    if (this.pending.length > 0) {
      const text = this.pending;
      this.pending = '';
      this.send(text);
    }
    if (!this.waiting) this.settled();
  };

  /**
   * The string itself goes to write(2): Node encodes it into memory of its
   * own, outside the JavaScript heap, where a Buffer.from per turn was an
   * allocation the garbage collector then had to reclaim. A Buffer is made
   * only for what a full destination did not take.
   */
  private send(text: string): void {
    let written = 0;
    try {
      written = writeSync(this.fd, text);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') return this.fail(err as Error);
    }
    if (written < Buffer.byteLength(text, 'utf8')) this.sendLater(Buffer.from(text, 'utf8').subarray(written));
  }

  private sendLater(data: Buffer): void {
    this.waiting = true;
    writeAsync(this.fd, data, (err, n) => {
      if (err !== null && err.code !== 'EAGAIN') {
        this.waiting = false;
        return this.fail(err);
      }
      const rest = data.subarray(err === null ? n : 0);
      if (rest.length > 0) return void setTimeout(() => this.sendLater(rest), 10);
      this.waiting = false;
      this.flushTurn();
    });
  }

  /** Standard output is gone (closed pipe): nothing to tell, nowhere to tell it; the lines are dropped. */
  private fail(err: Error): void {
    this.pending = '';
    this.settled(err);
  }

  private settled(err?: Error): void {
    if (this.flushedCallbacks.length === 0) return;
    const cbs = this.flushedCallbacks;
    this.flushedCallbacks = [];
    for (const cb of cbs) cb(err);
  }
}
