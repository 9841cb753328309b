// How holds end when nobody settles or releases them: their owner's lease
// lapsed (leases.ts says whose), their owner is known to be gone, or they
// reached billing.hold_max_ms. A hold is voided (its money is spendable
// again; a settlement that comes later still charges, OrgActor.settle), or,
// when its stream reported progress and its owner cannot settle it any more,
// settled on that progress as an 'interrupted' usage row (docs/billing.md,
// "Interrupted streams"). Apart from the Ledger, which runs the sweeps and
// owns the actors, so that the rules for ending a hold read in one place.
import type { Logger } from '../log/logger.js';
import type { OrgActor } from './actor.js';
import type { Leases } from './leases.js';
import type { SettleCommand } from './protocol.js';
import type { Recalls } from './recalls.js';
import type { HoldRecord } from './records.js';

/** What expiry needs of the Ledger: the way of any settlement, for a hold settled on its progress, and who is told of an ended hold. */
export interface Settlements {
  settle(cmd: SettleCommand): Promise<void>;
  /** The write carrying this request's settlement, while it is queued. */
  written(requestId: string): Promise<void> | undefined;
  /** Told of every hold voided by its lease or maximum age, or settled on its progress (the Redis host drops it from its mirror). */
  readonly onHoldExpired: ((hold: HoldRecord) => void) | null;
}

type Why = 'lease' | 'max_age';

export class Expiry {
  /** ms between sweeps: a hold is voided up to one sweep early so that none is ever older than hold_max_ms. */
  readonly sweepEveryMs: number;
  /** Holds voided by their lease or maximum age since start (allotments are not calls' holds and do not count). */
  expiredHolds = 0;
  /** Holds settled on their stream's last progress after their owner went silent, since start. */
  progressSettled = 0;
  /** Holds being settled on their progress right now (a store read away): the sweep leaves them alone. */
  private readonly settlingOnProgress = new Set<string>();

  constructor(
    private readonly ledger: Settlements,
    private readonly actors: ReadonlyMap<string, OrgActor>,
    private readonly leases: Leases,
    private readonly recalls: Recalls,
    private readonly limits: { holdLeaseMs: number; holdMaxMs: number },
    private readonly logger: Logger,
    private readonly clock: () => number,
  ) {
    this.sweepEveryMs = Math.min(1000, Math.max(20, Math.floor(limits.holdLeaseMs / 4)));
  }

  /**
   * The owner's process is known to be gone (the embedded host saw its
   * worker's IPC channel close, after every message it sent): its holds go
   * now instead of a lease later; one whose stream reported progress is
   * settled on it (it cannot settle itself any more).
   */
  ownerGone(id: string): void {
    const holds = this.leases.forget(id);
    for (const hold of holds) {
      this.settleOrExpire(hold, hold.progress !== undefined, 'lease');
      if (hold.allotment === true) this.recalls.gone(hold.requestId);
    }
    if (holds.length > 0) this.logger.warn({ owner: id, holds: holds.length }, 'ledger: owner exited; its holds were released or settled on their progress');
  }

  /** Releases the holds of owners whose lease ran out at `now`, and settles the orphans that are due on their progress. */
  lapse(now: number): void {
    const lapsed = this.leases.lapse(now, (owner, holds) => this.logger.warn({ owner, holds }, 'ledger: owner stopped renewing; its holds were released'));
    for (const hold of lapsed.voided) this.expire(hold, 'lease');
    for (const hold of lapsed.due) void this.settleOnProgress(hold);
  }

  /**
   * Ends the actor's holds that would pass billing.hold_max_ms before the
   * next sweep: voided one sweep early, so that none is ever older than
   * hold_max_ms between two sweeps. It looks at the holds oldest first (a Map
   * keeps insertion order, which is creation order but for adopted holds) and
   * stops at the first young one; the slow sweep (`slow`) looks at all of
   * them, and so does every sweep at an organization with calls carved from
   * an allotment (they start before they are inserted).
   */
  ageOut(actor: OrgActor, now: number, slow: boolean): void {
    const voidBefore = now + this.sweepEveryMs - this.limits.holdMaxMs;
    for (const hold of actor.holds.values()) {
      if (hold.createdAt > voidBefore) {
        if (slow || actor.allotments.carved > 0) continue;
        break;
      }
      if (this.settlingOnProgress.has(hold.requestId)) continue;
      // An orphan (its owner gone) is settled on its last progress now rather than a lease later; any other
      // hold is voided, and its owner's settlement, when it comes, still charges (OrgActor.settle).
      const orphan = this.leases.takeOrphan(hold.requestId);
      this.leases.drop(hold);
      this.settleOrExpire(hold, orphan, 'max_age');
    }
  }

  /** A hold nobody will settle: settled on its last progress when `onProgress`, else voided. */
  private settleOrExpire(hold: HoldRecord, onProgress: boolean, why: Why): void {
    if (onProgress) void this.settleOnProgress(hold);
    else this.expire(hold, why);
  }

  /** The owner never came back: the hold is settled on what its stream last reported (checked: a previous owner may have done it). */
  private async settleOnProgress(hold: HoldRecord): Promise<void> {
    const actor = this.actors.get(hold.orgId);
    if (actor?.holds.get(hold.requestId) !== hold || hold.progress === undefined || this.settlingOnProgress.has(hold.requestId)) return;
    this.settlingOnProgress.add(hold.requestId);
    try {
      const now = this.clock();
      await this.ledger.settle({ usage: { ...hold.progress, finishedAt: now, totalMs: Math.max(0, now - hold.createdAt) }, check: true });
      this.progressSettled++;
      this.logger.warn({ rid: hold.requestId, org: hold.orgId, owner: hold.owner, charged: hold.progress.chargedMicros }, 'ledger: owner gone mid-stream; settled on its last progress');
      await this.ledger.written(hold.requestId);
      this.ledger.onHoldExpired?.(hold);
    } catch (err) {
      this.logger.error({ rid: hold.requestId, err: (err as Error).message }, 'ledger: settling on progress failed; the hold expires');
      this.expire(hold, 'lease');
    } finally {
      this.settlingOnProgress.delete(hold.requestId);
    }
  }

  private expire(hold: HoldRecord, why: Why): void {
    // Voided, not closed: the money is spendable again and a later settlement still charges (OrgActor.settle).
    if (this.actors.get(hold.orgId)?.unhold(hold.requestId) == null) return;
    if (hold.allotment === true) {
      // Its owner is gone: what it held is free again. No call's hold lapsed, but the host's mirror drops it all the same.
      this.recalls.gone(hold.requestId);
      this.ledger.onHoldExpired?.(hold);
      return;
    }
    this.expiredHolds++;
    this.ledger.onHoldExpired?.(hold);
    // A lease lapsing is routine (a worker died); a hold reaching its maximum age is a call that never settled: say so.
    if (why === 'max_age') this.logger.warn({ rid: hold.requestId, org: hold.orgId, owner: hold.owner, ageMs: this.clock() - hold.createdAt }, 'ledger: hold voided at billing.hold_max_ms');
    else this.logger.debug({ rid: hold.requestId, org: hold.orgId, why }, 'ledger: hold expired');
  }
}
