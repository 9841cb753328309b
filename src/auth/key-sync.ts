// Keeps a worker's LiveKeyIndex equal to the store's live keys:
//  - at start, every live key hash (one snapshot, with its change-log position);
//  - every POLL_MS, the change log after that position (one indexed range
//    read, usually empty). This is what carries edits made by the `tollgate`
//    command, which cannot reach the cluster's IPC bus, and what covers a lost
//    notification;
//  - at once, when the bus says a key changed (console edits in this cluster,
//    or LISTEN/NOTIFY from any instance with DATABASE_URL);
//  - every RELOAD_MS, a full reload, which also drops keys that expired.
// So a revocation reaches every worker within POLL_MS plus one query, well
// inside the promised second, even with no notification at all.
import type { Logger } from '../log/logger.js';
import type { Pool } from '../store/pool.js';
import { LiveKeyIndex } from './key-index.js';
import { keyChangesSince, loadLiveKeys, type IndexEntry } from './key-store.js';

export const POLL_MS = 250;
const RELOAD_MS = 10 * 60_000;
const BATCH = 1000;

export class KeySync {
  private seq = 0;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private lastReload = 0;
  private failing = false;

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

  private schedule(): void {
    this.timer = setTimeout(() => {
      void this.pollNow().finally(() => {
        if (this.timer !== null) this.schedule();
      });
    }, POLL_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }
}
