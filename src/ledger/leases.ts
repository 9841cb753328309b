// Who holds what, and for how long. Leases belong to owners (a worker
// process, or an instance's worker with the Redis host), not to each hold: an
// owner renews all its holds with one heartbeat, and when its heartbeats stop
// for billing.hold_lease_ms its holds lapse. A hold whose stream reported
// progress does not lapse for free: it becomes an orphan and stays held one
// more lease (the owner may only have been cut off, and then settles it
// itself), then is due to be settled on its last progress as an 'interrupted'
// usage row (docs/billing.md, "Interrupted streams"). Pure bookkeeping: the
// ledger decides what lapsing means for the money (expiry.ts).
import type { HoldRecord } from './records.js';

interface Owner {
  lastBeat: number;
  holds: Set<HoldRecord>;
}

export interface Lapsed {
  /** Holds without progress whose owner stopped renewing: void them. */
  voided: HoldRecord[];
  /** Orphans a lease old: settle them on their progress. */
  due: HoldRecord[];
}

export class Leases {
  private readonly owners = new Map<string, Owner>();
  /** Holds with progress whose owner went silent, by request id → when: due one lease later. */
  private readonly orphans = new Map<string, { hold: HoldRecord; since: number }>();

  constructor(private readonly leaseMs: number) {}

  get ownerCount(): number {
    return this.owners.size;
  }

  /** The owner is alive at `now`: its holds' leases run from now. */
  beat(id: string, now: number): void {
    this.owner(id, now).lastBeat = now;
  }

  /** A hold made (or adopted) at `now`, which also renews its owner. */
  add(hold: HoldRecord, now: number): void {
    const owner = this.owner(hold.owner, now);
    owner.lastBeat = now;
    owner.holds.add(hold);
  }

  /** The hold closed (settled, released, voided): no lease of it is kept. */
  drop(hold: HoldRecord): void {
    this.owners.get(hold.owner)?.holds.delete(hold);
    this.orphans.delete(hold.requestId);
  }

  /** Whether the hold is an orphan; it stops being one (its settlement is the caller's now). */
  takeOrphan(requestId: string): boolean {
    return this.orphans.delete(requestId);
  }

  /** The owner is known to be gone (its process exited): every hold it had, at once. */
  forget(id: string): HoldRecord[] {
    const owner = this.owners.get(id);
    if (owner === undefined) return [];
    this.owners.delete(id);
    return [...owner.holds];
  }

  /** Owners whose lease ran out at `now` lose their holds; orphans a lease old are due. `silent` counts the owners gone quiet with holds. */
  lapse(now: number, silent: (id: string, holds: number) => void): Lapsed {
    const out: Lapsed = { voided: [], due: [] };
    for (const [id, owner] of this.owners) {
      if (owner.lastBeat + this.leaseMs > now) continue;
      this.owners.delete(id);
      for (const hold of owner.holds) {
        if (hold.progress !== undefined) this.orphans.set(hold.requestId, { hold, since: now });
        else out.voided.push(hold);
      }
      if (owner.holds.size > 0) silent(id, owner.holds.size);
    }
    for (const [rid, o] of this.orphans) {
      if (o.since + this.leaseMs > now) continue;
      this.orphans.delete(rid);
      out.due.push(o.hold);
    }
    return out;
  }

  private owner(id: string, now: number): Owner {
    let owner = this.owners.get(id);
    if (owner === undefined) {
      owner = { lastBeat: now, holds: new Set() };
      this.owners.set(id, owner);
    }
    return owner;
  }
}
