// A call's cancellation: set once, when its client goes away, and heard by the
// supplier attempt in progress. Not an AbortController: making one, and adding
// and removing a listener on its signal (an EventTarget), cost ~10 µs of CPU
// per call on this VM, more than the rest of the call's bookkeeping together
// (docs/performance.md, "undici's dispatch").
export class CallAbort {
  aborted = false;
  /** The attempt in progress (a call makes one at a time), told once. */
  private listener: (() => void) | null = null;

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    const listener = this.listener;
    this.listener = null;
    listener?.();
  }

  /** `fn` is called when the call is aborted, unless `unlisten` came first. Aborted already: not called (check `aborted`). */
  listen(fn: () => void): void {
    this.listener = fn;
  }

  unlisten(fn: () => void): void {
    if (this.listener === fn) this.listener = null;
  }
}

/** The reason an attempt's request is aborted with when its call was. */
export class CallAborted extends Error {
  override readonly name = 'CallAborted';

  constructor() {
    super('the client went away');
  }
}
