// Reservations waiting for a writer of settlements that has fallen behind
// the store (the primary's journal, a worker's books): each waits until the
// oldest settlement not yet written is younger than its bound, or gives up.
// Woken by the writer after each write, the only thing that shortens it.
interface Waiter {
  maxLagMs: number;
  resolve: (caughtUp: boolean) => void;
  timer: NodeJS.Timeout;
}

export class LagWaiters {
  private waiters: Waiter[] = [];

  /** `behind(maxLagMs)`: whether the writer's oldest unwritten settlement has waited longer than that. */
  constructor(private readonly behind: (maxLagMs: number) => boolean) {}

  /** Resolves true once not behind `maxLagMs`, or false when `waitMs` passes first. */
  wait(maxLagMs: number, waitMs: number): Promise<boolean> {
    if (!this.behind(maxLagMs)) return Promise.resolve(true);
    return new Promise((resolve) => {
      const waiter: Waiter = {
        maxLagMs,
        resolve,
        timer: setTimeout(() => {
          this.waiters = this.waiters.filter((w) => w !== waiter);
          resolve(false);
        }, waitMs),
      };
      this.waiters.push(waiter);
    });
  }

  /** After a write: those no longer behind their bound go on. */
  wake(): void {
    if (this.waiters.length === 0) return;
    const still: Waiter[] = [];
    for (const w of this.waiters) {
      if (this.behind(w.maxLagMs)) still.push(w);
      else {
        clearTimeout(w.timer);
        w.resolve(true);
      }
    }
    this.waiters = still;
  }
}
