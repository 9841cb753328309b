// What a Ledger reports of its books and its work (the primary turns it into
// gauges and counters, src/cluster/metrics.ts; the Redis host sums its shards').
import type { OrgActor } from './actor.js';

export interface LedgerStats {
  actors: number;
  owners: number;
  openHolds: number;
  expiredHolds: number;
  /** Micros held by the open holds (balance and package). */
  heldMicros: number;
  /** Settlements not yet written to the store, and how long the oldest has waited (ms). */
  backlog: number;
  flushLagMs: number;
  /** Money charged above holds (the usage rows' overdraft), and in how many settlements, since start. */
  overdraftMicros: number;
  overdraftSettlements: number;
  /** Holds settled on their stream's last progress after their owner went silent, since start. */
  progressSettled: number;
  /** Calls settled in their own workers (worker-books.ts) and told here per batch, since start. */
  workerSettled: number;
  /** Reservations the actors here answered (a worker's round trip: a call not reserved from its allotment, or one asking a grant), and allotments granted or topped up, since start. */
  reservations: number;
  grants: number;
  /** Age of the oldest open hold (ms); 0 when none. Never above billing.hold_max_ms. */
  oldestHoldMs: number;
  /** Workers' open allotments (allotments.ts), apart from openHolds; their money is in heldMicros. */
  allotments: number;
  /** Reservations held back because the journal was behind billing.journal_max_lag_ms, and those of them refused (503), since start (store-gate.ts). */
  storeWaits: number;
  storeRefusals: number;
  /** The journal's batches written since start: by COPY, and by the statement (retries, and batches that met a row already stored: store.ts). */
  storeCopyWrites: number;
  storeStatementWrites: number;
}

/** The holds and allotments open across `actors`: counts, money held, and the oldest hold's age at `now`. */
export function holdTotals(actors: Iterable<OrgActor>, now: number): Pick<LedgerStats, 'openHolds' | 'allotments' | 'heldMicros' | 'oldestHoldMs'> {
  let openHolds = 0;
  let allotments = 0;
  let heldMicros = 0;
  let oldest = Infinity;
  for (const a of actors) {
    openHolds += a.holds.size - a.allotments.open;
    allotments += a.allotments.open;
    heldMicros += a.heldBalance + a.heldPackage;
    for (const hold of a.holds.values()) if (hold.allotment !== true) oldest = Math.min(oldest, hold.createdAt);
  }
  return { openHolds, allotments, heldMicros, oldestHoldMs: oldest === Infinity ? 0 : Math.max(0, now - oldest) };
}
