// Writing a text/event-stream response through uWS: the status line and
// headers once, then frames, each batch in one cork (one syscall). uWS keeps
// whatever the socket did not take and returns false; the caller must then
// await `writable()` before producing more, so a slow reader costs bounded
// memory (the upstream read pauses and TCP pushes back on the supplier).
//
// A client that stops reading is not waited for forever: when the socket has
// taken nothing for `stalledMs` (http.stalled_client_ms) while the writer
// waits on it, `writable()` answers false and the caller cancels the stream.
// A client that reads, however slowly, wakes the writer and is served at its
// pace. A client that keeps up never waits: the normal path starts no timer.
import type { RequestContext } from './context.js';
import { drainState, writeRequestId } from './respond.js';

const HEADERS: ReadonlyArray<readonly [string, string]> = [
  ['Content-Type', 'text/event-stream; charset=utf-8'],
  ['Cache-Control', 'no-cache'],
  ['X-Accel-Buffering', 'no'],
];

export class SseWriter {
  private waiting: ((drained: boolean) => void) | null = null;
  private stallTimer: ReturnType<typeof setTimeout> | null = null;
  /** ms since request start when the first frame went out. */
  firstByteAt: number | null = null;

  constructor(
    private readonly ctx: RequestContext,
    private readonly stalledMs: number,
  ) {
    const resume = (): boolean => {
      this.release(true);
      return true;
    };
    ctx.res.onWritable(resume);
    // A client leaving also releases a writer waiting for the socket to drain.
    const previous = ctx.onAbort;
    ctx.onAbort = () => {
      previous?.();
      resume();
    };
  }

  get closed(): boolean {
    return this.ctx.aborted || this.ctx.finished;
  }

  /**
   * Writes frames (already in SSE text form); opens the response on the first
   * call. Returns false when the socket is backed up: await `writable()`.
   */
  write(frames: string): boolean {
    const ctx = this.ctx;
    if (ctx.aborted || ctx.finished) return true;
    let ok = true;
    ctx.res.cork(() => {
      if (!ctx.responded) this.open();
      ok = ctx.res.write(frames);
    });
    return ok;
  }

  private open(): void {
    const ctx = this.ctx;
    ctx.responded = true;
    ctx.status = 200;
    ctx.res.writeStatus('200 OK');
    writeRequestId(ctx);
    for (const [k, v] of HEADERS) ctx.res.writeHeader(k, v);
    if (drainState.draining) ctx.res.writeHeader('Connection', 'close');
    this.firstByteAt = performance.now() - ctx.startedAt;
  }

  /**
   * Resolves true when the socket can take more (or the client left), false
   * when it took nothing for `stalledMs`: the caller cancels the stream then.
   */
  writable(): Promise<boolean> {
    if (this.closed) return Promise.resolve(true);
    return new Promise((resolve) => {
      this.waiting = resolve;
      this.stallTimer = setTimeout(() => this.release(false), this.stalledMs);
    });
  }

  private release(drained: boolean): void {
    if (this.stallTimer !== null) clearTimeout(this.stallTimer);
    this.stallTimer = null;
    const waiting = this.waiting;
    this.waiting = null;
    if (waiting !== null) waiting(drained);
  }

  /** Ends the stream cleanly (after the surface's terminal frame). */
  end(lastFrames = ''): void {
    const ctx = this.ctx;
    if (ctx.aborted || ctx.finished) return;
    ctx.res.cork(() => {
      if (!ctx.responded) this.open();
      ctx.res.end(lastFrames);
    });
    ctx.finish();
  }

  /** Cuts the connection: the client sees the stream fail, not finish. */
  cut(): void {
    const ctx = this.ctx;
    if (ctx.aborted || ctx.finished) return;
    ctx.res.close();
  }
}
