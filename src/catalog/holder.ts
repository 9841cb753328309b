// Holds the worker's catalog snapshot and keeps it current: a cheap revision
// query every catalog.refresh_ms (and at once on a change notification); a
// full reload only when the revision moved. A failed refresh marks the
// snapshot stale (GET /v1/models then advertises nothing) while model calls go
// on resolving against the last good snapshot; the next good refresh recovers.
import type { Logger } from '../log/logger.js';
import type { Pool } from '../store/pool.js';
import { currentRevision, loadCatalog } from './load.js';
import { markStale, type CatalogSnapshot } from './snapshot.js';

export class CatalogHolder {
  private snap: CatalogSnapshot | null = null;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;

  constructor(
    private readonly pool: Pool,
    private readonly simulatorUrl: string | null,
    private readonly refreshMs: number,
    private readonly logger: Logger,
  ) {}

  /** Loads the first snapshot (throws when the store cannot be read) and starts refreshing. */
  async start(): Promise<void> {
    this.snap = await loadCatalog(this.pool, this.simulatorUrl);
    this.reportUnspeakable(this.snap);
    this.schedule();
  }

  get snapshot(): CatalogSnapshot {
    if (this.snap === null) throw new Error('catalog not loaded');
    return this.snap;
  }

  /** Loaded and the last refresh reached the store. */
  get ready(): boolean {
    return this.snap !== null && !this.snap.stale;
  }

  /** Refresh now (a change notification arrived); coalesces with a refresh under way. */
  refreshNow(): Promise<void> {
    if (this.running !== null) {
      this.again = true;
      return this.running;
    }
    this.running = this.refresh().finally(() => {
      this.running = null;
      if (this.again) {
        this.again = false;
        void this.refreshNow();
      }
    });
    return this.running;
  }

  private schedule(): void {
    this.timer = setTimeout(() => {
      void this.refreshNow().finally(() => {
        if (this.timer !== null) this.schedule();
      });
    }, this.refreshMs);
    this.timer.unref();
  }

  private async refresh(): Promise<void> {
    const current = this.snap!;
    try {
      const revision = await currentRevision(this.pool);
      if (revision === current.revision && !current.stale) return;
      this.snap = await loadCatalog(this.pool, this.simulatorUrl);
      if (this.snap.revision !== current.revision) this.reportUnspeakable(this.snap);
      if (current.stale) this.logger.info({ revision }, 'catalog store reachable again');
      else this.logger.info({ from: current.revision, to: revision }, 'catalog revision loaded');
    } catch (err) {
      if (!current.stale) {
        this.logger.warn({ err: (err as Error).message, revision: current.revision }, 'catalog refresh failed; list marked stale');
        this.snap = markStale(current);
      }
    }
  }

  /** Once per loaded revision: routes the snapshot left out because no wire can carry them. */
  private reportUnspeakable(snap: CatalogSnapshot): void {
    for (const reason of snap.unspeakable) this.logger.error({ revision: snap.revision }, `${reason}; fix the catalog`);
  }

  stop(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }
}
