// A worker's allotments: slices of an organization's money and request quota
// that its ledger actor granted this worker in advance, spent here with no
// round trip per call (the embedded host; issue 14's lever for the two IPC
// round trips every call paid to the cluster primary).
//
// An allotment is itself a hold in the actor, owned by this worker, so zero
// overspend still holds: the actor's hold H and what is left here r obey
// H − r = what this worker's calls took from it that the actor has not heard
// settled. On the embedded host a call reserved here is settled in this
// worker and the actor hears of it in a batch (worker-books.ts), which moves
// what the calls took out of H; on the Redis host its settlement names the
// allotment, with the same effect. A stream's first progress (Redis host), or
// the allotment's retirement, makes each call in progress a hold of its own,
// so the rules for holds (leases, progress, hold_max_ms) apply to it as before.
//
// Admissions are counted in the actor's quota when granted, for the current
// wall-clock second only; those unused when the second ends go back (with the
// next request, or at retirement). Grants are small shares of what is free
// (actor-allotments.ts ALLOT_SHARE) and stop near a limit, and a refusal is
// only given once the organization's allotments are back (Ledger.reserve
// recalls them), so a balance or a quota spread over many workers refuses no
// call that the actor alone would have admitted.
import type { Funding } from '../money/money.js';
import { CallTable } from './call-table.js';
import type { AllotCommand, AllotmentWant, Allotted, ProgressCommand, ReleaseCommand, ReserveCommand, ReserveReply, ReserveRequest, RetiredCommand, SettleCommand } from './protocol.js';

/** An allotment unused this long goes back to the actor (its money is free again, its admissions leave the quota). */
const IDLE_MS = 1000;
/**
 * An allotment is retired this long after it opened, and a fresh one asked
 * for: its calls in progress become holds of their own, so none is older
 * than billing.hold_max_ms because it sat in an allotment; and shorter than
 * the actor's memory of settled calls (actor.ts SETTLED_MEMORY_MS), which
 * keeps a repeated settlement from counting against an allotment twice.
 */
const MAX_AGE_MS = 30_000;
const SWEEP_MS = 250;
/**
 * A busy allotment asks for about this long's worth of its calls at its
 * recent pace, between billing.allotment_calls and MAX_GROWTH times that:
 * at thousands of calls a second a fixed 32 would send an ask every 16
 * calls, and each ask wakes the actor (issue 32: the primary's CPU per call).
 * The actor still grants at most an eighth of what is free.
 */
const PACE_HORIZON_MS = 100;
const MAX_GROWTH = 16;
/** A dry call waits for at most this many answers to asks before it asks the actor for itself alone. */
const MAX_WAITS = 3;
/** An ask that failed this way certainly never reached the actor (a host client's error for a command it could not send). */
export class NeverSent extends Error {}

/** The answer to a call reserved here. */
const RESERVED_HERE: ReserveReply = { ok: true };

interface LocalCall {
  allotment: Allotment;
  amount: number;
  startedAt: number;
  /** Its stream reported progress: the actor made it a hold of its own, so it settles there. */
  carved?: true;
}

class Allotment {
  /** Micros left to reserve from here. */
  money = 0;
  /** Admissions left for wall-clock second `second`. */
  slots = 0;
  second = -1;
  /** Calls reserved from here that have not settled yet (they are in Allotments.calls): a retirement looks for them only when there are some. */
  inFlight = 0;
  /** A reservation asking for more is on its way: one at a time. */
  asking = false;
  /** Settles when the ask on its way is answered (or fails): calls that find the allotment dry wait for it rather than each going to the actor. */
  answered: Promise<unknown> | null = null;
  /** The last answer to an ask granted something (reserve: whether a call that could not take it waits for the next). */
  lastAnswerGranted = true;
  /** Asks sent for this allotment; the latest is the one `asking` waits for (AllotmentWant.ask). */
  asks = 0;
  /** Calls reserved here since the last ask, and when it was sent: the pace an ask sizes itself by. */
  takenSinceAsk = 0;
  askedAt: number;
  /** How many calls' worth the last ask was for. */
  target = 0;
  /** The actor granted it something at least once (else it holds nothing there, and retiring it needs no message). */
  granted = false;
  retired = false;
  lastUsed: number;

  constructor(
    readonly id: string,
    readonly orgId: string,
    readonly funding: Funding,
    readonly openedAt: number,
  ) {
    this.lastUsed = openedAt;
    this.askedAt = openedAt;
  }
}

export class Allotments {
  /** The allotment being spent, by organization and funding source. */
  private readonly open = new Map<string, Allotment>();
  /** Calls reserved from an allotment, until they settle or are released (not a Map: call-table.ts says why). */
  private readonly calls = new CallTable<LocalCall>();
  /** Allotments with an ask on its way, by id (retired ones too: a grant may still come back to them). */
  private readonly asking = new Map<string, Allotment>();
  private seq = 0;
  /** Runs while an allotment is open: an idle worker has none, and no timer wakes it. */
  private sweeper: NodeJS.Timeout | null = null;

  /**
   * `callsPerAllotment`: how many calls like the one that asks an allotment
   * should hold (money: that many times its amount; admissions: that many).
   * `retired` carries a retirement to the actor, in order with this worker's
   * settlements. `topUp`: the host's ask for more with no call of its own (AllotCommand),
   * sent when an allotment runs low so that it does not run dry under load
   * (then every call in progress would go to the actor one by one); null:
   * the host has none, and asks ride calls' reservations only.
   */
  constructor(
    private readonly owner: string,
    private readonly callsPerAllotment: number,
    private readonly retired: (cmd: RetiredCommand) => void,
    private readonly clock: () => number = Date.now,
    private readonly topUp: ((cmd: AllotCommand) => Promise<Allotted | null>) | null = null,
  ) {}

  /**
   * A host client's reservation (each host's client calls this): here when
   * an allotment has room for the call, else through `ask` (the host's round
   * trip to the actor), which carries a request for an allotment when one is
   * due and brings back what was granted.
   */
  async reserve(req: ReserveRequest, ask: (cmd: ReserveCommand) => Promise<ReserveReply>): Promise<ReserveReply> {
    // A key with a quota of its own is counted by the actor, call by call (key-quotas.ts): an allotment counts the organization's calls, not a key's.
    if (req.keyQuota !== undefined) return ask({ requestId: req.requestId, orgId: req.orgId, funding: req.funding, amount: req.amount, owner: this.owner, keyQuota: req.keyQuota });
    // Dry, and more is on its way (with a top-up: asked before it ran dry): wait for it, then try again. Again after an
    // answer that granted something this call could not take (others took it first, or it was for a second now past: at
    // each second's turn every waiter would otherwise go to the actor one by one), but not after one that granted nothing:
    // then the actor is serving this organization call by call, and waiting would serialize its calls.
    for (let waited = 0; ; waited++) {
      if (this.take(req)) return RESERVED_HERE;
      const a = this.topUp === null ? undefined : this.open.get(req.orgId + ' ' + req.funding);
      if (a === undefined || a.answered === null || waited === MAX_WAITS || (waited > 0 && !a.lastAnswerGranted)) break;
      await a.answered.catch(() => {});
    }
    const allot = this.want(req);
    const cmd: ReserveCommand = { requestId: req.requestId, orgId: req.orgId, funding: req.funding, amount: req.amount, owner: this.owner, ...(allot ? { allot } : {}) };
    let reply: ReserveReply | undefined;
    let unsent = false;
    try {
      const replied = ask(cmd);
      if (allot !== undefined) this.asking.get(allot.id)!.answered = replied;
      reply = await replied;
      return reply;
    } catch (err) {
      unsent = err instanceof NeverSent;
      throw err;
    } finally {
      if (allot !== undefined) this.granted(allot, reply?.ok === true ? reply.allotted : undefined, reply !== undefined || unsent);
    }
  }

  /** The settlement, naming the allotment its call was reserved from (as it is when there is none). */
  settlement(cmd: SettleCommand): SettleCommand {
    const call = this.calls.get(cmd.usage.requestId);
    return call === undefined ? cmd : { ...cmd, allotment: call.allotment.id };
  }

  /** The release, naming the allotment and what the call took from it. */
  release(cmd: ReleaseCommand): ReleaseCommand {
    const call = this.calls.get(cmd.requestId);
    return call === undefined ? cmd : { ...cmd, allotment: { id: call.allotment.id, amount: call.amount } };
  }

  /** The progress report, naming the allotment, what the call took and when (its first one makes the call a hold of its own). */
  progress(cmd: ProgressCommand): ProgressCommand {
    const call = this.calls.get(cmd.usage.requestId);
    if (call === undefined) return cmd;
    call.carved = true;
    return { ...cmd, allotment: { id: call.allotment.id, amount: call.amount, startedAt: call.startedAt } };
  }

  /**
   * A stream reserved here whose progress this worker may keep itself
   * (worker-books.ts): the allotment and what it took; null as for settleHere.
   */
  progressHere(requestId: string): { id: string; amount: number } | null {
    const call = this.calls.get(requestId);
    if (call === undefined || call.carved === true || call.allotment.retired) return null;
    return { id: call.allotment.id, amount: call.amount };
  }

  /**
   * A call reserved here that this worker may settle itself (worker-books.ts):
   * the allotment and what it took, and the call is no longer in progress
   * here. Null: not reserved here, or made a hold of its own (its stream's
   * progress, or its allotment's retirement): its settlement goes to the actor.
   */
  settleHere(requestId: string): { id: string; amount: number } | null {
    const call = this.calls.get(requestId);
    // A retired allotment's calls in progress became holds of their own at the actor (RetiredCommand.inFlight).
    if (call === undefined || call.carved === true || call.allotment.retired) return null;
    this.finish(requestId);
    return { id: call.allotment.id, amount: call.amount };
  }

  /** Reserves the call here if an allotment has room for it now; false: ask the actor. */
  take(req: ReserveRequest): boolean {
    const a = this.open.get(req.orgId + ' ' + req.funding);
    if (a === undefined) return false;
    const now = this.clock();
    if (!Number.isSafeInteger(req.amount) || req.amount < 0) return false; // only whole micros are taken from an allotment
    if (a.slots < 1 || a.money < req.amount || a.second !== Math.floor(now / 1000) || this.calls.has(req.requestId)) return false;
    a.slots--;
    a.money -= req.amount;
    a.lastUsed = now;
    a.takenSinceAsk++;
    const call: LocalCall = { allotment: a, amount: req.amount, startedAt: now };
    this.calls.set(req.requestId, call);
    a.inFlight++;
    // Half spent: ask for more now, so that the calls behind this one find it full.
    const half = a.target / 2;
    if (this.topUp !== null && !a.asking && (a.slots < half || a.money < req.amount * half)) this.refill(req);
    return true;
  }

  /** Tops up the allotment `req` was reserved from, with no call waiting on the answer (AllotCommand). */
  private refill(req: ReserveRequest): void {
    const want = this.want(req);
    if (want === undefined) return;
    const sent = this.topUp!({ orgId: req.orgId, funding: req.funding, owner: this.owner, amount: req.amount, allot: want });
    this.asking.get(want.id)!.answered = sent;
    sent.then(
      (allotted) => this.granted(want, allotted ?? undefined),
      (err) => this.granted(want, undefined, err instanceof NeverSent),
    );
  }

  /** What to ask for along with a reservation the actor makes (undefined: nothing, another ask is on its way). */
  want(req: ReserveRequest): AllotmentWant | undefined {
    if (this.callsPerAllotment < 1 || !Number.isSafeInteger(req.amount) || req.amount < 0) return undefined;
    const key = req.orgId + ' ' + req.funding;
    const now = this.clock();
    let a = this.open.get(key);
    if (a !== undefined && now - a.openedAt >= MAX_AGE_MS) {
      this.retire(a);
      a = undefined;
    }
    if (a === undefined) {
      a = new Allotment(`${this.owner}/a${++this.seq}`, req.orgId, req.funding, now);
      this.open.set(key, a);
      if (this.sweeper === null) {
        this.sweeper = setInterval(() => this.sweep(), SWEEP_MS);
        this.sweeper.unref();
      }
    }
    if (a.asking) return undefined;
    a.asking = true;
    a.asks++;
    this.asking.set(a.id, a);
    a.lastUsed = now;
    const second = Math.floor(now / 1000);
    let refund: AllotmentWant['refund'] = null;
    if (a.second !== second && a.slots > 0) {
      refund = { second: a.second, slots: a.slots };
      a.slots = 0;
    }
    const pace = (a.takenSinceAsk * PACE_HORIZON_MS) / Math.max(1, now - a.askedAt);
    const target = Math.min(this.callsPerAllotment * MAX_GROWTH, Math.max(this.callsPerAllotment, Math.ceil(pace)));
    a.takenSinceAsk = 0;
    a.askedAt = now;
    a.target = target;
    return {
      id: a.id,
      money: Math.max(0, Math.min(Number.MAX_SAFE_INTEGER, req.amount * target) - a.money),
      slots: Math.max(0, target - (a.second === second ? a.slots : 0)),
      refund,
      ask: a.asks,
    };
  }

  /**
   * The actor's answer to a reservation that carried `want` (allotted
   * undefined: nothing granted). `known` false: no answer came (the ask timed
   * out, or its transport failed after sending), yet the ask may have reached
   * the actor and been granted, or may still be (issue 39: after a Redis
   * stall an allotment granted to an ask nobody waited for any more stayed
   * held while its worker lived). The allotment is retired now: its
   * retirement follows the ask in the same stream (or pipe), names it, and so
   * gives back whatever it was granted.
   */
  granted(want: AllotmentWant, allotted: Allotted | undefined, known = true): void {
    const a = this.asking.get(want.id);
    if (a === undefined) return;
    this.asking.delete(want.id);
    a.answered = null;
    a.lastAnswerGranted = allotted !== undefined;
    // Retired while asking: that retirement named this ask, and the actor gave back what it granted (or refused it).
    if (a.retired) return void (a.asking = false);
    if (!known) return this.retire(a);
    a.asking = false;
    if (allotted === undefined) return;
    a.granted = true;
    a.money += allotted.money;
    if (a.second === allotted.second) a.slots += allotted.slots;
    else {
      a.second = allotted.second;
      a.slots = allotted.slots;
    }
  }

  /** The call's settlement (or release) is on its way: it is no longer in progress here. */
  finish(requestId: string): void {
    const call = this.calls.take(requestId);
    if (call !== undefined) call.allotment.inFlight--;
  }

  /** The allotment a call in progress was reserved from, what it took and when, or null. */
  taken(requestId: string): { id: string; amount: number; startedAt: number } | null {
    const call = this.calls.get(requestId);
    return call === undefined ? null : { id: call.allotment.id, amount: call.amount, startedAt: call.startedAt };
  }

  /**
   * The actor recalls allotment `id` of organization `orgId` (it is about to
   * refuse a call, or to show the account). Unknown here: already retired,
   * and that retirement is on its way (or retired while an ask for it is, and
   * that ask's answer is what comes next); else, with `orgId`, it is retired
   * again: a retirement the actor has seen already changes nothing there, and
   * one it never got (lost, or an allotment this worker never learned it was
   * granted) frees what the allotment holds.
   */
  recall(id: string, orgId?: string): void {
    const a = this.find(id);
    if (a !== null) return this.retire(a);
    if (orgId !== undefined && !this.asking.has(id)) this.retired({ orgId, id, unused: { second: -1, slots: 0 }, inFlight: [] });
  }

  /** Every allotment goes back (the worker is stopping). */
  close(): void {
    this.stopSweeping();
    for (const a of [...this.open.values()]) this.retire(a);
  }

  private sweep(): void {
    const now = this.clock();
    for (const a of [...this.open.values()]) {
      if (a.asking) continue;
      if (now - a.lastUsed >= IDLE_MS || now - a.openedAt >= MAX_AGE_MS) this.retire(a);
    }
    if (this.open.size === 0) this.stopSweeping();
  }

  private stopSweeping(): void {
    if (this.sweeper !== null) clearInterval(this.sweeper);
    this.sweeper = null;
  }

  private retire(a: Allotment): void {
    if (a.retired) return;
    a.retired = true;
    // An ask on its way (or unanswered) is named, so the actor gives back what it grants it.
    const pendingAsk = a.asking ? a.asks : undefined;
    a.asking = false;
    if (this.open.get(a.orgId + ' ' + a.funding) === a) this.open.delete(a.orgId + ' ' + a.funding);
    // An idle allotment (the usual retirement) has none: no scan of every call in progress.
    const inFlight: RetiredCommand['inFlight'] = [];
    if (a.inFlight > 0) {
      this.calls.forEach((c, requestId) => {
        if (c.allotment === a) inFlight.push({ requestId, amount: c.amount, startedAt: c.startedAt });
      });
    }
    const unused = { second: a.second, slots: a.slots };
    a.money = 0;
    a.slots = 0;
    if (a.granted || pendingAsk !== undefined) this.retired({ orgId: a.orgId, id: a.id, unused, inFlight, ...(pendingAsk !== undefined ? { pendingAsk } : {}) });
  }

  private find(id: string): Allotment | null {
    for (const a of this.open.values()) if (a.id === id) return a;
    return null;
  }
}
