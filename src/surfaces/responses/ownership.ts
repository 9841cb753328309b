// Which organization a response id belongs to, and nothing else (no content):
// what previous_response_id is checked against. Off the database on the hot
// path, the way keys are:
// - record() is called when the id is handed out (a stream's response.created,
//   a unary reply), whatever the response's ending: the id goes into this
//   worker's cache at once and into a batch written by one multi-row INSERT
//   every `flushMs` (never one INSERT per call; an id already held is a no-op);
// - owns() answers "yes" from the cache; anything else asks the store once,
//   keyed by (id, organization) (concurrent checks of one pair share the
//   query), and fills the cache on a yes.
// Every "no" takes one path, whoever owns the id: the cache is only trusted
// for a yes, and the store is asked whether *this* organization owns it, so
// another organization's id and an unknown one cost the same queries, the
// same wait and the same time (issue 30 item 10: the old check answered
// another's id from the cache or one query, an unknown one after a wait).
// The cache is bounded in entries (oldest first out) and in age (an entry
// older than maxAgeMs is asked again). Ownership never changes, so a stale
// entry cannot be wrong; the age bound only keeps the map from holding ids
// nobody continues from.
// A pair the store does not know is asked once more after one write
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
/** One shape for every check: whether this organization owns this id (the primary key finds the row, if any). */
const SELECT = 'SELECT 1 FROM response_owners WHERE response_id = $1 AND org_id = $2::uuid';

interface Entry {
  org: string;
  at: number;
}

/** What the responses surface asks of the ownership record (surface.ts, SurfaceServices). */
export interface ResponseOwnerBook {
  /** `id` was handed to `org` (response.created, or the unary reply): it belongs to `org` from now on. */
  record(id: string, org: string): void;
  /** Whether `org` owns `id`; every "no" costs the same (above). Rejects when the store cannot answer. */
  owns(id: string, org: string): Promise<boolean>;
}

export class ResponseOwnership implements ResponseOwnerBook {
  private readonly cache = new Map<string, Entry>();
  private ids: string[] = [];
  private orgs: string[] = [];
  private timer: ReturnType<typeof setTimeout> | null = null;
  private writing: Promise<void> | null = null;
  /** Checks on their way, by organization and id. */
  private readonly asking = new Map<string, Promise<boolean>>();

  constructor(
    private readonly store: Queryable,
    private readonly opts: OwnershipOptions,
    private readonly logger: Logger | null = null,
  ) {}

  /** `id` was handed to `org`: it belongs to `org` from now on. */
  record(id: string, org: string): void {
    // Already held (a stream recorded at response.created, then answered): recorded or read from the store once is enough.
    if (this.cache.get(id)?.org === org) return;
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

  /** Whether `org` owns `id`. A yes may come from the cache; a no always from the store, twice (above). Rejects when the store cannot answer. */
  async owns(id: string, org: string): Promise<boolean> {
    const hit = this.cache.get(id);
    if (hit !== undefined && performance.now() - hit.at <= this.opts.maxAgeMs) {
      if (hit.org === org) return true;
      // Another organization's, known here: asked of the store all the same, as an unknown id would be.
    } else if (hit !== undefined) {
      this.cache.delete(id);
    }
    const pair = org + ' ' + id;
    let asked = this.asking.get(pair);
    if (asked === undefined) {
      asked = this.ask(id, org).finally(() => this.asking.delete(pair));
      this.asking.set(pair, asked);
    }
    return asked;
  }

  private async ask(id: string, org: string): Promise<boolean> {
    let owns = await this.select(id, org);
    if (!owns) {
      await new Promise((r) => setTimeout(r, this.opts.flushMs + WRITE_MARGIN_MS));
      owns = this.cache.get(id)?.org === org || (await this.select(id, org));
    }
    if (owns) this.remember(id, org);
    return owns;
  }

  private async select(id: string, org: string): Promise<boolean> {
    const { rows } = await this.store.query(SELECT, [id, org]);
    return rows.length > 0;
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
