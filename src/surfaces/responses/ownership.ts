// Which organization a response id belongs to, and nothing else (no content):
// what previous_response_id is checked against. Off the database on the hot
// path, the way keys are:
// - record() is called when a response completes: the id goes into this
//   worker's cache at once and into a batch written by one multi-row INSERT
//   every `flushMs` (never one INSERT per call);
// - owner() answers from the cache; a miss asks the store once (concurrent
//   misses for one id share the query) and fills the cache.
// The cache is bounded in entries (oldest first out) and in age (an entry
// older than maxAgeMs is asked again). Ownership never changes, so a stale
// entry cannot be wrong; the age bound only keeps the map from holding ids
// nobody continues from.
// A miss that the store does not know is asked once more after one write
// interval: another worker may have recorded the id a moment ago and not
// written its batch yet.
import type { Logger } from '../../log/logger.js';

/** The one method of a pg Pool this needs (a test passes a pool; the worker its own). */
export interface Queryable {
  query(sql: string, params: unknown[]): Promise<{ rows: Array<Record<string, any>> }>;
}

export interface OwnershipOptions {
  /** Entries kept per worker (responses.owner_cache_entries). */
  maxEntries: number;
  /** Age after which an entry is asked of the store again (responses.owner_cache_max_age_ms). */
  maxAgeMs: number;
  /** How often recorded ids are written, in one statement (responses.owner_flush_ms). */
  flushMs: number;
}

/** Pending rows kept when the store cannot be written: past this, the oldest are dropped (and logged). */
const MAX_PENDING = 100_000;
/** Time allowed for another worker's batch to be written, beyond its interval, before an unknown id is refused. */
const WRITE_MARGIN_MS = 100;

const INSERT = 'INSERT INTO response_owners (response_id, org_id) SELECT * FROM unnest($1::text[], $2::uuid[]) ON CONFLICT DO NOTHING';
const SELECT = 'SELECT org_id::text AS org_id FROM response_owners WHERE response_id = $1';

interface Entry {
  org: string;
  at: number;
}

/** What the responses surface asks of the ownership record (surface.ts, SurfaceServices). */
export interface ResponseOwnerBook {
  /** A response completed: `id` belongs to `org` from now on. */
  record(id: string, org: string): void;
  /** The organization that owns `id`, or null when none does. Rejects when the store cannot answer. */
  owner(id: string): Promise<string | null>;
}

export class ResponseOwnership implements ResponseOwnerBook {
  private readonly cache = new Map<string, Entry>();
  private ids: string[] = [];
  private orgs: string[] = [];
  private timer: ReturnType<typeof setTimeout> | null = null;
  private writing: Promise<void> | null = null;
  private readonly asking = new Map<string, Promise<string | null>>();

  constructor(
    private readonly store: Queryable,
    private readonly opts: OwnershipOptions,
    private readonly logger: Logger | null = null,
  ) {}

  /** A response completed: `id` belongs to `org` from now on. */
  record(id: string, org: string): void {
    this.remember(id, org);
    if (this.ids.length >= MAX_PENDING) {
      this.ids.shift();
      this.orgs.shift();
      this.logger?.warn('responses: ownership rows pending past the bound; the oldest was dropped');
    }
    this.ids.push(id);
    this.orgs.push(org);
    this.timer ??= setTimeout(() => void this.flush(), this.opts.flushMs);
  }

  /** The organization that owns `id`, or null when no organization does. Rejects when the store cannot answer a miss. */
  async owner(id: string): Promise<string | null> {
    const hit = this.cache.get(id);
    if (hit !== undefined) {
      if (performance.now() - hit.at <= this.opts.maxAgeMs) return hit.org;
      this.cache.delete(id);
    }
    let asked = this.asking.get(id);
    if (asked === undefined) {
      asked = this.ask(id).finally(() => this.asking.delete(id));
      this.asking.set(id, asked);
    }
    return asked;
  }

  private async ask(id: string): Promise<string | null> {
    let org = await this.select(id);
    if (org === null) {
      await new Promise((r) => setTimeout(r, this.opts.flushMs + WRITE_MARGIN_MS));
      org = this.cache.get(id)?.org ?? (await this.select(id));
    }
    if (org !== null) this.remember(id, org);
    return org;
  }

  private async select(id: string): Promise<string | null> {
    const { rows } = await this.store.query(SELECT, [id]);
    return rows.length === 0 ? null : (rows[0]!.org_id as string);
  }

  private remember(id: string, org: string): void {
    this.cache.delete(id);
    this.cache.set(id, { org, at: performance.now() });
    // A Map iterates in insertion order: the first key is the oldest.
    while (this.cache.size > this.opts.maxEntries) this.cache.delete(this.cache.keys().next().value!);
  }

  /** Writes what is pending in one statement; on failure the rows wait for the next interval. */
  flush(): Promise<void> {
    this.timer = null;
    if (this.writing !== null) return this.writing.then(() => this.flush());
    if (this.ids.length === 0) return Promise.resolve();
    const ids = this.ids;
    const orgs = this.orgs;
    this.ids = [];
    this.orgs = [];
    this.writing = this.store
      .query(INSERT, [ids, orgs])
      .then(() => undefined)
      .catch((err: Error) => {
        this.logger?.warn({ err: err.message, rows: ids.length }, 'responses: ownership rows not written; retrying');
        this.ids = ids.concat(this.ids);
        this.orgs = orgs.concat(this.orgs);
        this.timer ??= setTimeout(() => void this.flush(), Math.max(this.opts.flushMs, 1000));
      })
      .finally(() => {
        this.writing = null;
      });
    return this.writing;
  }

  /** Writes what is pending (worker shutdown). */
  async close(): Promise<void> {
    if (this.timer !== null) clearTimeout(this.timer);
    await this.flush();
  }
}
