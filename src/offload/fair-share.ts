// Fair shares of one pool among organizations (issue 30 items 4 and 5). A
// piscina pool serves its queue first come, first served: one organization
// that sends many slow tasks (embeddings from a slow supplier, 2 MB
// count_tokens bodies) fills every slot and queues everyone else behind all
// of its work — another organization's call went from 6 ms to 5.4 s (fetches)
// and to 16–30 s (CPU tasks). Here tasks enter the pool through a gate:
// - at most `capacity` are in the pool at once (what it can run at once), so
//   piscina's own queue stays empty and the waiting happens here;
// - one owner holds at most `share` of those slots (below capacity when the
//   capacity allows it), so a slot is free for another owner at once, however
//   slow the first owner's tasks are;
// - a freed slot goes to the waiting owner with the fewest tasks in the pool
//   (the longest waiting among equals), and each owner's own tasks keep their
//   order: per-owner FIFO queues served round-robin.
// The common case (nothing waiting, room in the pool and in the owner's
// share) is two counter updates and no allocation; the queues exist only
// while something waits.

/** A task's turn in the pool: resolved when it may start. */
interface Waiter {
  start: () => void;
  cancel: (err: Error) => void;
}

/** The tasks of one owner that wait for a slot, oldest first. */
interface Line {
  owner: string;
  waiters: Waiter[];
}

/**
 * Slots an owner may hold at most: three quarters of the pool's, at least
 * one. With one fetch thread (32 slots) one organization holds 24 and 8 stay
 * free for the others; a CPU pool of one thread cannot be split, and there
 * the round-robin alone bounds another owner's wait by the task in progress.
 */
export function ownerShare(capacity: number): number {
  return Math.max(1, capacity - Math.floor(capacity / 4));
}

export class FairShare {
  private inPool = 0;
  /** Tasks in the pool per owner (owners with none are not kept). */
  private readonly held = new Map<string, number>();
  /** Owners with tasks waiting, in the order they queued (an owner served goes to the back). */
  private readonly lines: Line[] = [];

  constructor(
    readonly capacity: number,
    readonly share = ownerShare(capacity),
  ) {}

  /** Tasks waiting for a slot, all owners together. */
  get waiting(): number {
    let n = 0;
    for (const line of this.lines) n += line.waiters.length;
    return n;
  }

  /** Tasks in the pool now. */
  get running(): number {
    return this.inPool;
  }

  /**
   * Takes a slot for `owner` now (true), or says it must wait (false: call
   * wait()). Every slot taken is given back exactly once with leave().
   */
  tryEnter(owner: string): boolean {
    if (this.lines.length !== 0 || this.inPool >= this.capacity) return false;
    const mine = this.held.get(owner) ?? 0;
    if (mine >= this.share) return false;
    this.inPool++;
    this.held.set(owner, mine + 1);
    return true;
  }

  /**
   * Waits for `owner`'s turn; resolves holding a slot (give it back with
   * leave()). `signal`, when given, is told how to withdraw the waiter (a
   * call whose client left): its promise then rejects with the error given,
   * holding nothing.
   */
  wait(owner: string, signal?: (withdraw: (err: Error) => void) => void): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let line = this.lines.find((l) => l.owner === owner);
      if (line === undefined) {
        line = { owner, waiters: [] };
        this.lines.push(line);
      }
      const waiter: Waiter = { start: resolve, cancel: reject };
      line.waiters.push(waiter);
      signal?.((err) => this.withdraw(owner, waiter, err));
      this.pump();
    });
  }

  /** Gives back a slot `owner` held, and hands it to whoever waits. */
  leave(owner: string): void {
    this.inPool--;
    // Handed out first while the task that ends still counts as `owner`'s: among owners that hold as
    // few, the one that just had its turn goes last (with one slot, the owners alternate).
    if (this.lines.length !== 0) this.pump();
    const mine = (this.held.get(owner) ?? 1) - 1;
    if (mine <= 0) this.held.delete(owner);
    else this.held.set(owner, mine);
    // `owner` itself may be under its share again now.
    if (this.lines.length !== 0) this.pump();
  }

  /** Starts waiting tasks while there is room: each slot to the waiting owner under its share that holds fewest. */
  private pump(): void {
    while (this.inPool < this.capacity) {
      let best = -1;
      let fewest = this.share;
      for (let i = 0; i < this.lines.length; i++) {
        const n = this.held.get(this.lines[i].owner) ?? 0;
        if (n < fewest) {
          fewest = n;
          best = i;
        }
      }
      if (best === -1) return; // everyone waiting holds their whole share
      const line = this.lines[best];
      const waiter = line.waiters.shift()!;
      this.lines.splice(best, 1);
      if (line.waiters.length !== 0) this.lines.push(line);
      this.inPool++;
      this.held.set(line.owner, fewest + 1);
      waiter.start();
    }
  }

  private withdraw(owner: string, waiter: Waiter, err: Error): void {
    const i = this.lines.findIndex((l) => l.owner === owner);
    if (i === -1) return;
    const line = this.lines[i];
    const at = line.waiters.indexOf(waiter);
    if (at === -1) return; // started already: its slot is given back by leave()
    line.waiters.splice(at, 1);
    if (line.waiters.length === 0) this.lines.splice(i, 1);
    waiter.cancel(err);
  }
}
