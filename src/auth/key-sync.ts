// Keeps a worker's LiveKeyIndex equal to the store's live keys:
//  - at start, every live key hash (one snapshot, with its change-log position);
//  - at once, when the bus says a key changed. The store announces every
//    change itself, in the transaction that logs it (a trigger, migration
//    011), whoever writes it: the console, the `tollgate` command, SQL;
//  - on a timer, the change log after that position (one indexed range read,
//    usually empty): every POLL_MS while this worker's LISTEN connection is
//    down, and at once when it listens again (what was announced meanwhile
//    was missed); every SAFETY_POLL_MS while it listens, for a notice lost
//    some way nobody foresaw;
//  - every RELOAD_MS, a full reload, which also drops keys that expired.
// So a revocation reaches every worker within one notice and one query, and
// within POLL_MS plus one query while notices cannot reach it: inside the
// promised second either way. (Until 2026-11-29 every worker polled every
// 250 ms whatever the bus did: ~2.5 ms/s of an idle worker's CPU, and ~0.7 of
// the store's, docs/performance.md.)
import type { Logger } from '../log/logger.js';
import type { Pool } from '../store/pool.js';
import { LiveKeyIndex } from './key-index.js';
import { keyChangesSince, loadLiveKeys, type IndexEntry } from './key-store.js';

export const POLL_MS = 250;
export const SAFETY_POLL_MS = 2000;
const RELOAD_MS = 10 * 60_000;
const BATCH = 1000;

export class KeySync {
  private seq = 0;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private lastReload = 0;
  private failing = false;
  /** Whether the bus's notices reach this worker now (ChangeBus.watch): the timer's pace. */
  private notified = false;

  constructor(
    private readonly pool: Pool,
    readonly index: LiveKeyIndex,
    /** Called for each changed key hash, so cached records are dropped. */
    private readonly onChange: (hash: Buffer) => void,
    private readonly logger: Logger,
  ) {}

  /** Loads the live set (throws when the store cannot be read) and starts polling. */
  async start(): Promise<void> {
    await this.reload();
    this.schedule();
  }

  private async reload(): Promise<void> {
    const { seq, keys } = await loadLiveKeys(this.pool);
    const fresh = new LiveKeyIndex(keys.length);
    for (const k of keys) fresh.set(k.hash, k.expiresAt?.getTime() ?? null);
    this.index.adopt(fresh);
    // Changes after the snapshot are re-read from the log: applying one twice is harmless.
    this.seq = seq;
    this.lastReload = Date.now();
  }

  private apply(change: IndexEntry): void {
    if (change.live) this.index.set(change.hash, change.expiresAt?.getTime() ?? null);
    else this.index.delete(change.hash);
    this.onChange(change.hash);
  }

  private async poll(): Promise<void> {
    if (Date.now() - this.lastReload >= RELOAD_MS) {
      await this.reload();
      return;
    }
    for (;;) {
      const changes = await keyChangesSince(this.pool, this.seq, BATCH);
      for (const c of changes) {
        this.apply(c);
        this.seq = c.seq;
      }
      if (changes.length < BATCH) return;
    }
  }

  /** Polls now (a notification arrived); coalesces with a poll under way. */
  pollNow(): Promise<void> {
    if (this.running !== null) {
      this.again = true;
      return this.running;
    }
    this.running = this.poll()
      .then(
        () => {
          if (this.failing) this.logger.info('key change log reachable again');
          this.failing = false;
        },
        (err: Error) => {
          // Logged once per outage; the index keeps its last state meanwhile.
          if (!this.failing) this.logger.warn({ err: err.message }, 'key change log poll failed; retrying');
          this.failing = true;
        },
      )
      .finally(() => {
        this.running = null;
        if (this.again) {
          this.again = false;
          void this.pollNow();
        }
      });
    return this.running;
  }

  /**
   * Resolves once a poll that started after this call has finished: a poll
   * already under way may have read the log before the caller's write.
   */
  async catchUp(): Promise<void> {
    if (this.running !== null) await this.running;
    await this.pollNow();
  }

  /**
   * The bus listens again (true: read the log now, for what was missed, then
   * poll slowly) or stopped listening (false: poll every POLL_MS from now on).
   */
  setNotified(listening: boolean): void {
    if (listening === this.notified) return;
    this.notified = listening;
    if (listening) void this.pollNow();
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.schedule();
    }
  }

  private schedule(): void {
    const timer = setTimeout(
      () => {
        void this.pollNow().finally(() => {
          // Unless stopped, or replaced meanwhile by a timer at the other pace (setNotified).
          if (this.timer === timer) this.schedule();
        });
      },
      this.notified ? SAFETY_POLL_MS : POLL_MS,
    );
    timer.unref();
    this.timer = timer;
  }

  stop(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }
}
