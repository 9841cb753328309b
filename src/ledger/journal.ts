// Group commit of settlements: usage rows and their charges queue in memory
// and go to the store in one statement every billing.flush_ms (0: as soon as
// the previous write returns, so concurrent settlements share a write and
// each waits only for the write that carries it).
//
// What this promises: a charge the actor has applied is written within
// flush_ms unless the store is unreachable, in which case it is retried until
// it is written or the host stops. A crash of the host loses at most what was
// queued and not yet written. A row the store refuses as malformed is written
// alone so it cannot hold back the others; if it still fails, it is dropped,
// logged, and its charge undone in memory so memory and store agree.
//
// What it does not do is refuse a row: a settlement is money already spent.
// When the store falls behind (slow, away, or starved of CPU by the calls
// themselves), the ledger holds back new reservations instead (behind() and
// caughtUp(), used by store-gate.ts), so the backlog, and what a crash of
// the host could lose, stays bounded by billing.journal_max_lag_ms.
import { randomUUID } from 'node:crypto';
import type { Logger } from '../log/logger.js';
import type { UsageRow } from './protocol.js';
import type { Entry, WriteResult } from './records.js';
import type { LedgerStore, SettledRow } from './store.js';
import { LagWaiters } from './lag-waiters.js';

/** Rows per statement: keeps one write's parameters and lock time bounded. */
const MAX_BATCH = 2000;
const RETRY_MIN_MS = 100;
const RETRY_MAX_MS = 5000;

interface Pending extends SettledRow {
  /** The charge as the actor applied it (what the store writes is derived from the usage row: chargeEntry). */
  entry: Entry | null;
  /** When it was queued (ms since epoch): the flush lag an operator sees. */
  at: number;
  /** A write that carried it failed without saying whether it committed: the next one looks for it by its tag. */
  sent: boolean;
  done: () => void;
}

/** Told once per entry when the store answers for it: inserted, already there (a repeat), or dropped. */
export type StoredCallback = (entry: Entry, result: WriteResult) => void;

/** PostgreSQL refused the data itself (class 22 data exception, 23 integrity): retrying the same rows cannot help. */
export function isDataError(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'string' && (code.startsWith('22') || code.startsWith('23'));
}

export class Journal {
  private queue: Pending[] = [];
  /** Rows in the write in flight, and when the oldest of them was queued. */
  private writing = 0;
  private writingSince = 0;
  private readonly catchUps = new LagWaiters((maxLagMs) => this.behind(maxLagMs));
  private timer: NodeJS.Timeout | null = null;
  private lock: Promise<unknown> = Promise.resolve();
  private retryMs = 0;
  private closed = false;
  private readonly epoch = randomUUID().slice(0, 8);
  private seq = 0;

  constructor(
    private readonly store: LedgerStore,
    private readonly flushMs: number,
    private readonly logger: Logger,
    private readonly onStored: StoredCallback,
  ) {}

  /** Rows not yet written: queued, and in the write in flight. */
  get backlog(): number {
    return this.queue.length + this.writing;
  }

  /** How long the oldest row not yet written has waited (0: none). */
  lagMs(now: number): number {
    const oldest = this.oldestAt();
    return oldest === null ? 0 : Math.max(0, now - oldest);
  }

  /** Whether the oldest row not yet written has waited longer than `maxLagMs`. */
  behind(maxLagMs: number): boolean {
    const oldest = this.oldestAt();
    return oldest !== null && Date.now() - oldest > maxLagMs;
  }

  /** The rows in flight were queued before any still queued (a failed write puts them back in front). */
  private oldestAt(): number | null {
    if (this.writing > 0) return this.writingSince;
    return this.queue.length === 0 ? null : this.queue[0].at;
  }

  /**
   * Resolves true once no row not yet written has waited longer than
   * `maxLagMs` (checked after each write, the only thing that shortens the
   * backlog), or false when `waitMs` passes first.
   */
  caughtUp(maxLagMs: number, waitMs: number): Promise<boolean> {
    return this.catchUps.wait(maxLagMs, waitMs);
  }

  /** Queues a usage row and its charge (the actor's chargeEntry(usage), or null); resolves once they are written (or dropped as unwritable). */
  append(usage: UsageRow, entry: Entry | null): Promise<void> {
    return new Promise((done) => {
      this.queue.push({ usage, entry, writer: entry === null ? null : `${this.epoch}:${++this.seq}`, at: Date.now(), sent: false, done });
      this.schedule(this.flushMs);
    });
  }

  /** Runs `fn` with no write in flight and none starting until it returns (credits, reloads). */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.lock.then(fn);
    this.lock = run.catch(() => {});
    return run;
  }

  /** Writes everything queued now; resolves when written or when the store refused to take it (then it stays queued). */
  flush(): Promise<void> {
    return this.exclusive(() => this.writeQueued());
  }

  private schedule(delayMs: number): void {
    if (this.timer !== null || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.flush();
    }, delayMs);
  }

  // Only what is queued when the write starts: rows that come while it is in
  // flight set their own timer (append), so under load the store sees one
  // statement per flush_ms, not one after the other as fast as it answers.
  private async writeQueued(): Promise<void> {
    let left = this.queue.length;
    while (left > 0 && this.queue.length > 0) {
      const take = this.queue.splice(0, Math.min(MAX_BATCH, left));
      left -= take.length;
      this.writing = take.length;
      this.writingSince = take[0].at;
      const failed = await this.tryWrite(take); // never rejects
      this.writing = 0;
      this.catchUps.wake();
      if (failed !== null) {
        for (const p of failed.rest) p.sent = true;
        this.queue.unshift(...failed.rest);
        this.retryMs = Math.min(RETRY_MAX_MS, Math.max(RETRY_MIN_MS, this.retryMs * 2));
        if (this.retryMs === RETRY_MIN_MS || this.retryMs === RETRY_MAX_MS) {
          this.logger.warn({ err: (failed.err as Error).message, backlog: this.queue.length, retryInMs: this.retryMs }, 'ledger: store write failed; retrying');
        }
        this.schedule(this.retryMs);
        return;
      }
      if (this.retryMs !== 0) {
        this.logger.info({ backlog: this.queue.length }, 'ledger: store writes resumed');
        this.retryMs = 0;
      }
    }
  }

  /** Null when every row was written or dropped; else what is left and why. */
  private async tryWrite(take: Pending[]): Promise<{ rest: Pending[]; err: unknown } | null> {
    try {
      await this.write(take);
      return null;
    } catch (err) {
      if (!isDataError(err)) return { rest: take, err };
    }
    // One malformed row fails the whole statement: write them alone to find it.
    for (let i = 0; i < take.length; i++) {
      const p = take[i];
      try {
        await this.write([p]);
      } catch (err) {
        if (!isDataError(err)) return { rest: take.slice(i), err };
        this.logger.error({ err: (err as Error).message, rid: p.usage.requestId, org: p.usage.orgId }, 'ledger: usage row refused by the store; dropped');
        if (p.entry !== null) this.onStored(p.entry, 'dropped');
        p.done();
      }
    }
    return null;
  }

  private async write(take: Pending[]): Promise<void> {
    const stored = await this.store.writeBatch(take, !take.some((p) => p.sent));
    for (const p of take) if (p.entry !== null) this.onStored(p.entry, stored.has(p.entry.id) ? 'inserted' : 'duplicate');
    for (const p of take) p.done();
  }

  /** Stops the timer and writes what is queued, retrying until `deadlineMs` passes. */
  async close(deadlineMs = 5000): Promise<void> {
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    const until = Date.now() + deadlineMs;
    while (this.queue.length > 0 && Date.now() < until) {
      await this.flush();
      if (this.queue.length > 0) await new Promise((r) => setTimeout(r, Math.min(250, Math.max(0, until - Date.now()))));
    }
    if (this.queue.length > 0) this.logger.error({ lost: this.queue.length }, 'ledger: stopped with usage rows not written');
  }
}

/** Resolves when `p` does (a write landed) or after `ms`, whichever is first: a wait for the store that cannot hang its caller. */
export function capped(p: Promise<void>, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    void p.then(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
