// The ledger's records: a hold as the actor keeps it (and leases.ts, the
// Redis host's mirror and a shard's next owner pass it on), a journal entry
// and an organization's row as the store reads and writes them, and the
// entry a settlement's charge becomes. Apart from the actor (actor.ts) so that
// what only moves or stores them (the journal, the store, the Redis client)
// does not depend on the actor's rules.
import type { Funding } from '../money/money.js';
import type { UsageRow } from './protocol.js';

export interface HoldRecord {
  readonly orgId: string;
  readonly requestId: string;
  readonly funding: Funding;
  /** Fixed for a call's hold; an allotment's grows with each grant and shrinks as its calls settle. */
  amount: number;
  readonly owner: string;
  readonly createdAt: number;
  /** A worker's allotment (allotments.ts), not one call's hold: its id is the allotment's. */
  readonly allotment?: true;
  /** A call's hold carved from an allotment (ActorAllotments.carve). */
  readonly carved?: true;
  /** The last progress its stream reported: what it settles on if its owner dies (ProgressCommand). */
  progress?: UsageRow;
  /** An allotment's last grant of admissions and the ask it answered (in memory only, as the quota it was counted in). */
  lastGrant?: { ask: number; second: number; slots: number };
}

/** A movement of money, as the journal stores it. Charges are negative. */
export interface Entry {
  id: string;
  orgId: string;
  kind: 'opening' | 'credit' | 'charge' | 'forfeit';
  funding: Funding;
  amount: number;
  requestId: string | null;
  expiresAt: string | null;
  note: string | null;
}

/** An organization row as the store reads it. */
export interface AccountRow {
  balance: number;
  package: number;
  packageExpiresAt: number | null;
  quotaPerSecond: number | null;
  quotaPerMinute: number | null;
  /** Which of the entries asked about the journal held when this row was read (its balance counts them). */
  journaled?: ReadonlySet<string>;
  /** Each writer's last batch the balance counts (its parts' seq, migration 008): worker-books.ts. */
  writerSeqs?: ReadonlyMap<string, number>;
}

/** What the store said of one charge the actor applied: written by this write, already there (another writer's), or refused. */
export type WriteResult = 'inserted' | 'duplicate' | 'dropped';

export interface QuotaDefaults {
  perSecond: number;
  perMinute: number;
}

/** The journal entry of a settlement's charge; its id makes a repeated settlement a no-op in the store. */
export function chargeEntry(usage: UsageRow): Entry {
  return {
    id: 'charge:' + usage.requestId,
    orgId: usage.orgId,
    kind: 'charge',
    funding: usage.funding,
    amount: -usage.chargedMicros,
    requestId: usage.requestId,
    expiresAt: null,
    note: null,
  };
}

/**
 * A settlement's charge against what its call held (OrgActor.settle, and a
 * worker's own books): the whole charge, even above the hold (the part above
 * is the row's overdraft); one that is not a whole number of micros is a
 * fault upstream, so it takes what was held, never NaN or a fraction.
 */
export function chargeAgainst(usage: UsageRow, held: number): void {
  const charged = Number.isSafeInteger(usage.chargedMicros) ? usage.chargedMicros : held;
  usage.chargedMicros = Math.max(0, charged);
  usage.overdraftMicros = Math.max(0, usage.chargedMicros - held);
}
