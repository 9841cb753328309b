// Late settlements, checked against the store before they count. A
// settlement older than SETTLE_CHECK_AFTER_MS when it arrives (or one its host
// marks `check`) may have been stored by another writer already: a worker
// that gave up on the actor and wrote it directly (never sooner than
// DIRECT_WRITE_AFTER_MS after sending it, redis/client.ts), or a shard's
// previous owner. It counts only after the store says whether it holds it,
// read with the balance in one snapshot, so memory never counts it twice or
// not at all. A younger one cannot have been stored by anyone else, and takes
// no round trip. The checks of one event-loop turn share one store read.
import type { Logger } from '../log/logger.js';
import type { OrgActor } from './actor.js';
import type { Journal } from './journal.js';
import type { UsageRow } from './protocol.js';
import { chargeEntry, type AccountRow } from './records.js';
import type { LedgerStore } from './store.js';

export const SETTLE_CHECK_AFTER_MS = 500;

type Settled = ReturnType<OrgActor['settle']>;

export class LateChecks {
  /** Waiting for the next store read, in arrival order. */
  private queued: Array<{ actor: OrgActor; usage: UsageRow; allotment: string | null; done: (out: Settled) => void }> = [];

  constructor(
    private readonly store: LedgerStore,
    private readonly journal: Journal,
    private readonly logger: Logger,
    private readonly clock: () => number,
  ) {}

  /** Settles `usage` on `actor` once the store has said whether it already holds its charge. */
  settle(actor: OrgActor, usage: UsageRow, allotment: string | null): Promise<Settled> {
    actor.lastUsed = this.clock(); // not evicted while its check waits
    return new Promise((done) => {
      if (this.queued.push({ actor, usage, allotment, done }) === 1) setImmediate(() => void this.run());
    });
  }

  private run(): Promise<void> {
    const batch = this.queued;
    this.queued = [];
    return this.journal.exclusive(async () => {
      const actors = new Set(batch.map((c) => c.actor));
      const ids = [...actors].flatMap((a) => a.pendingIds());
      for (const c of batch) ids.push(chargeEntry(c.usage).id);
      let rows: Map<string, AccountRow> | null = null;
      try {
        rows = await this.store.loadAccounts([...actors].map((a) => a.orgId), ids);
      } catch (err) {
        // The store cannot say: apply them as memory knows them; the journal's unique key still refuses a repeat.
        this.logger.warn({ err: (err as Error).message, settlements: batch.length }, 'ledger: late settlements not checked against the store');
      }
      const now = this.clock();
      for (const a of actors) {
        const row = rows?.get(a.orgId);
        if (row !== undefined) a.load(row);
      }
      for (const c of batch) c.done(c.actor.settle(c.usage, now, rows?.get(c.actor.orgId)?.journaled?.has(chargeEntry(c.usage).id) === true, c.allotment));
    });
  }
}
