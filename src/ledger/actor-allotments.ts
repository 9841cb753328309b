// The actor's side of workers' allotments (allotments.ts is the worker's):
// granting them, the calls that settle or are released against them, the
// calls carved from them into holds of their own, and their retirement. An
// allotment is a hold among the actor's `holds`, so the actor's rules for
// money and holds stay the only ones; this keeps the rules for granting and
// spending them apart from those. One per actor, made with it: the settle
// and reserve paths reach it without allocating anything.
import type { OrgActor } from './actor.js';
import type { AllotCommand, AllotmentWant, Allotted, ReserveCommand } from './protocol.js';
import type { RequestQuota } from './quota.js';
import type { HoldRecord } from './records.js';

/**
 * An allotment grant takes at most this share of what is free (money, and
 * what either quota window has left), so a few workers' allotments never
 * take all of it; and after any refusal no allotment is granted for
 * ALLOT_FROZEN_MS: an organization near a limit is served call by call, and
 * its refusals are exact (Ledger.reserve recalls the allotments first).
 */
const ALLOT_SHARE = 1 / 8;
const ALLOT_FROZEN_MS = 1000;

export class ActorAllotments {
  /** No allotment is granted before this time (ms): see ALLOT_FROZEN_MS. */
  private frozenUntil = 0;
  /** Account views being read (Ledger.account): none is granted until each has been. */
  private viewsBeingRead = 0;
  /** Open allotments among the actor's `holds`. */
  open = 0;
  /** Open holds carved from an allotment among the actor's `holds` (created before they were inserted: see Expiry.ageOut). */
  carved = 0;

  /** `quota`: the actor's own, which grants count admissions in and retirements give them back to. */
  constructor(
    private readonly actor: OrgActor,
    private readonly quota: RequestQuota,
  ) {}

  /**
   * Grants what it can of `want` to the worker's allotment, after the call's
   * own hold: money only as much as is free (at most ALLOT_SHARE of it, and
   * at least this call's amount or all that was wanted, or none), admissions
   * as ALLOT_SHARE of what both windows have left. Both or nothing: money
   * without admissions (or the reverse) would sit unused. Null: nothing granted.
   */
  grant(cmd: Pick<ReserveCommand, 'owner' | 'funding' | 'amount'>, want: AllotmentWant, now: number): Allotted | null {
    const actor = this.actor;
    if (now < this.frozenUntil || this.viewsBeingRead > 0 || want.slots < 1) return null;
    const existing = actor.holds.get(want.id);
    if (existing !== undefined && (existing.allotment !== true || existing.owner !== cmd.owner || existing.funding !== cmd.funding)) return null;
    if (existing === undefined && actor.isClosed(want.id)) return null; // retired: never reopened
    // A package that expires is spent call by call: the actor alone sees the moment it does.
    if (cmd.funding === 'package' && actor.packageExpiresAt !== null) return null;
    let money = 0;
    if (want.money > 0) {
      const free = cmd.funding === 'balance' ? actor.balance - actor.heldBalance : actor.package - actor.heldPackage;
      money = Math.min(want.money, Math.floor(free * ALLOT_SHARE));
      // A top-up that wants less than one call's amount (the worker holds nearly enough) gets all of it, or the admissions
      // it came for would be refused with it.
      if (money < Math.min(cmd.amount, want.money) || money <= 0) return null;
    }
    const slots = this.quota.admitMany(now, want.slots, ALLOT_SHARE);
    if (slots === 0) return null;
    let hold = existing;
    if (hold === undefined) {
      hold = { orgId: actor.orgId, requestId: want.id, funding: cmd.funding, amount: 0, owner: cmd.owner, createdAt: now, allotment: true };
      actor.holds.set(want.id, hold);
      this.open++;
    }
    hold.amount += money;
    if (hold.funding === 'balance') actor.heldBalance += money;
    else actor.heldPackage += money;
    const second = Math.floor(now / 1000);
    if (want.ask !== undefined) hold.lastGrant = { ask: want.ask, second, slots };
    return { money, slots, second };
  }

  /** A top-up with no call of its own (AllotCommand): the admissions it gives back first, then what can be granted. */
  topUp(cmd: AllotCommand, now: number): Allotted | null {
    this.actor.lastUsed = now;
    if (cmd.allot.refund) this.quota.refund(cmd.allot.refund.second, cmd.allot.refund.slots);
    return this.grant(cmd, cmd.allot, now);
  }

  /** A call was refused at `now`: no allotment is granted for ALLOT_FROZEN_MS. */
  refused(now: number): void {
    this.frozenUntil = now + ALLOT_FROZEN_MS;
  }

  /**
   * An account view is being read: no allotment is granted until its viewRead(),
   * so none granted to a call arriving meanwhile shows as held. Granting
   * resumes as soon as the view is read: a console page read every few
   * seconds must not send the organization's calls to the actor one by one
   * (it froze grants for ALLOT_FROZEN_MS until 2026-11-27).
   */
  viewStarted(): void {
    this.viewsBeingRead++;
  }

  viewRead(): void {
    this.viewsBeingRead--;
  }

  /** The allotment `id`, if open here. */
  get(id: string): HoldRecord | null {
    const hold = this.actor.holds.get(id);
    return hold?.allotment === true ? hold : null;
  }

  /**
   * A call reserved from allotment `id` settled or was released: what it
   * took leaves the allotment's hold (the settlement charges it). False if
   * the allotment is not open here (voided with its owner, or never known).
   */
  spend(id: string, amount: number): boolean {
    const hold = this.get(id);
    if (hold === null) return false;
    const take = Math.min(Math.max(0, amount), hold.amount);
    hold.amount -= take;
    if (hold.funding === 'balance') this.actor.heldBalance -= take;
    else this.actor.heldPackage -= take;
    return true;
  }

  /**
   * A call reserved from allotment `id` becomes a hold of its own (its
   * stream reported progress, or the allotment retires while it runs): the
   * money moves from one hold to the other. Null when there is nothing to
   * carve (the call is already a hold, or closed, or the allotment is gone).
   */
  carve(id: string, requestId: string, amount: number, createdAt: number): HoldRecord | null {
    const from = this.get(id);
    const actor = this.actor;
    if (from === null || actor.holds.has(requestId) || actor.isClosed(requestId)) return null;
    const take = Math.min(Math.max(0, amount), from.amount);
    from.amount -= take;
    const hold: HoldRecord = { orgId: actor.orgId, requestId, funding: from.funding, amount: take, owner: from.owner, createdAt, carved: true };
    actor.holds.set(requestId, hold);
    this.carved++;
    return hold;
  }

  /**
   * The worker stopped spending allotment `id` (carve its calls in progress
   * first): its unused admissions leave the quota's windows, the rest of its
   * money is free again, and the id is never reopened (a grant to it still
   * on its way is refused). The allotment's hold, or null if none was open.
   */
  retire(id: string, unused: { second: number; slots: number }, now: number, pendingAsk?: number): HoldRecord | null {
    this.actor.lastUsed = now;
    this.actor.close(id, now);
    const hold = this.get(id);
    // Not open: retired already (a retirement sent twice, its first send timed out but arrived) or never granted: nothing to refund.
    if (hold === null) return null;
    this.quota.refund(unused.second, unused.slots);
    // Granted to an ask the worker never saw answered: it never spent those admissions.
    const lost = hold.lastGrant;
    if (lost !== undefined && lost.ask === pendingAsk) this.quota.refund(lost.second, lost.slots);
    return this.actor.unhold(id);
  }
}
