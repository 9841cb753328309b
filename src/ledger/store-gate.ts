// Backpressure from the store: while the journal writes settlements more
// slowly than calls make them, admitting more calls would only grow its
// backlog (and what a crash of the host could lose) without bound. So a new
// reservation waits while the oldest settlement not yet written is older than
// billing.journal_max_lag_ms, and is refused if the store has not caught up
// within STORE_BEHIND_WAIT_MS. Settlements are never held back: their money
// is already spent. Used by Ledger.reserve, so both hosts apply it, and by an
// embedded host's worker for its own books (worker-books.ts).
import type { Logger } from '../log/logger.js';

/** A writer of settlements to the store: the primary's journal, or a worker's books. */
export interface SettlementWriter {
  readonly backlog: number;
  lagMs(now: number): number;
  behind(maxLagMs: number): boolean;
  caughtUp(maxLagMs: number, waitMs: number): Promise<boolean>;
}

/**
 * How long a reservation waits for a journal that is behind before it is
 * refused (a 503 to the caller): under the workers' 3 s reservation timeout,
 * so the caller gets an answer rather than a timeout.
 */
const STORE_BEHIND_WAIT_MS = 2000;
/** A store that stays behind under load is logged this often, with the counts since start, not once per wait. */
const STORE_BEHIND_LOG_EVERY_MS = 10_000;

export class StoreGate {
  /** Reservations that waited for the store, and those of them refused, since start. */
  waits = 0;
  refusals = 0;
  private loggedAt = -Infinity;

  constructor(
    private readonly journal: SettlementWriter,
    private readonly maxLagMs: number,
    private readonly logger: Logger,
  ) {}

  /** True when a reservation must wait (one comparison: this is on every reservation's path). */
  get closed(): boolean {
    return this.journal.behind(this.maxLagMs);
  }

  /** Resolves once the store has caught up; throws (the reservation is refused) if it does not within STORE_BEHIND_WAIT_MS. */
  async wait(): Promise<void> {
    this.waits++;
    const now = Date.now();
    if (now - this.loggedAt >= STORE_BEHIND_LOG_EVERY_MS) {
      this.loggedAt = now;
      this.logger.warn(
        { backlog: this.journal.backlog, lagMs: this.journal.lagMs(now), waits: this.waits, refused: this.refusals },
        'ledger: the store is behind; new reservations wait for it',
      );
    }
    if (await this.journal.caughtUp(this.maxLagMs, STORE_BEHIND_WAIT_MS)) return;
    this.refusals++;
    throw new Error(`ledger: the store is ${this.journal.lagMs(Date.now())} ms behind with ${this.journal.backlog} settlements; reservation refused`);
  }
}
