// A worker's allotments: slices of an organization's money and request quota
// that its ledger actor granted this worker in advance, spent here with no
// round trip per call (the embedded host; issue 14's lever for the two IPC
// round trips every call paid to the cluster primary).
//
// An allotment is itself a hold in the actor, owned by this worker, so zero
// overspend still holds: the actor's hold H and what is left here r obey
// H − r = what this worker's calls in progress took from it. A call reserved
// here settles through the actor like any other (its settlement names the
// allotment, and the actor moves what the call took out of H); a stream's
// first progress, or the allotment's retirement, makes each call in progress
// a hold of its own, so the rules for holds (leases, progress, hold_max_ms)
// apply to it as before.
//
// Admissions are counted in the actor's quota when granted, for the current
// wall-clock second only; those unused when the second ends go back (with the
// next request, or at retirement). Grants are small shares of what is free
// (actor-allotments.ts ALLOT_SHARE) and stop near a limit, and a refusal is
// only given once the organization's allotments are back (Ledger.reserve
// recalls them), so a balance or a quota spread over many workers refuses no
// call that the actor alone would have admitted.
import type { Funding } from '../money/money.js';
import type { AllotmentWant, Allotted, ProgressCommand, ReleaseCommand, ReserveCommand, ReserveReply, ReserveRequest, RetiredCommand, SettleCommand } from './protocol.js';

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
/** The answer to a call reserved here. */
const RESERVED_HERE: ReserveReply = { ok: true };

interface LocalCall {
  allotment: Allotment;
  amount: number;
  startedAt: number;
}

class Allotment {
  /** Micros left to reserve from here. */
  money = 0;
  /** Admissions left for wall-clock second `second`. */
  slots = 0;
  second = -1;
  /** Calls reserved from here that have not settled yet, by request id. */
  readonly inFlight = new Map<string, LocalCall>();
  /** A reservation asking for more is on its way: one at a time. */
  asking = false;
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
  }
}

export class Allotments {
  /** The allotment being spent, by organization and funding source. */
  private readonly open = new Map<string, Allotment>();
  /** Calls reserved from an allotment, until they settle or are released. */
  private readonly calls = new Map<string, LocalCall>();
  /** Allotments with an ask on its way, by id (retired ones too: a grant may still come back to them). */
  private readonly asking = new Map<string, Allotment>();
  private seq = 0;
  private readonly sweeper: NodeJS.Timeout;

  /**
   * `callsPerAllotment`: how many calls like the one that asks an allotment
   * should hold (money: that many times its amount; admissions: that many).
   * `retired` carries a retirement to the actor, in order with this worker's
   * settlements.
   */
  constructor(
    private readonly owner: string,
    private readonly callsPerAllotment: number,
    private readonly retired: (cmd: RetiredCommand) => void,
    private readonly clock: () => number = Date.now,
  ) {
    this.sweeper = setInterval(() => this.sweep(), SWEEP_MS);
    this.sweeper.unref();
  }

  /**
   * A host client's reservation (each host's client calls this): here when
   * an allotment has room for the call, else through `ask` (the host's round
   * trip to the actor), which carries a request for an allotment when one is
   * due and brings back what was granted.
   */
  async reserve(req: ReserveRequest, ask: (cmd: ReserveCommand) => Promise<ReserveReply>): Promise<ReserveReply> {
    if (this.take(req)) return RESERVED_HERE;
    const allot = this.want(req);
    const cmd: ReserveCommand = { requestId: req.requestId, orgId: req.orgId, funding: req.funding, amount: req.amount, owner: this.owner, ...(allot ? { allot } : {}) };
    let reply: ReserveReply | undefined;
    try {
      reply = await ask(cmd);
      return reply;
    } finally {
      if (allot !== undefined) this.granted(allot, reply?.ok === true ? reply.allotted : undefined);
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
    const taken = this.taken(cmd.usage.requestId);
    return taken === null ? cmd : { ...cmd, allotment: taken };
  }

  /** Reserves the call here if an allotment has room for it now; false: ask the actor. */
  take(req: ReserveRequest): boolean {
    const a = this.open.get(req.orgId + ' ' + req.funding);
    if (a === undefined) return false;
    const now = this.clock();
    if (a.slots < 1 || a.money < req.amount || a.second !== Math.floor(now / 1000) || this.calls.has(req.requestId)) return false;
    a.slots--;
    a.money -= req.amount;
    a.lastUsed = now;
    const call: LocalCall = { allotment: a, amount: req.amount, startedAt: now };
    a.inFlight.set(req.requestId, call);
    this.calls.set(req.requestId, call);
    return true;
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
    }
    if (a.asking) return undefined;
    a.asking = true;
    this.asking.set(a.id, a);
    a.lastUsed = now;
    const second = Math.floor(now / 1000);
    let refund: AllotmentWant['refund'] = null;
    if (a.second !== second && a.slots > 0) {
      refund = { second: a.second, slots: a.slots };
      a.slots = 0;
    }
    const target = this.callsPerAllotment;
    return {
      id: a.id,
      money: Math.max(0, Math.min(Number.MAX_SAFE_INTEGER, req.amount * target) - a.money),
      slots: Math.max(0, target - (a.second === second ? a.slots : 0)),
      refund,
    };
  }

  /** The actor's answer to a reservation that carried `want` (allotted undefined: nothing granted, or no answer). */
  granted(want: AllotmentWant, allotted: Allotted | undefined): void {
    const a = this.asking.get(want.id);
    if (a === undefined) return;
    this.asking.delete(want.id);
    a.asking = false;
    if (allotted === undefined) return;
    if (a.retired) {
      // Granted before the actor saw the retirement: the money went with it, but the admissions were
      // counted after the retirement said which were unused; give them back too.
      this.retired({ orgId: a.orgId, id: a.id, unused: { second: allotted.second, slots: allotted.slots }, inFlight: [] });
      return;
    }
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
    const call = this.calls.get(requestId);
    if (call === undefined) return;
    this.calls.delete(requestId);
    call.allotment.inFlight.delete(requestId);
  }

  /** The allotment a call in progress was reserved from, what it took and when, or null. */
  taken(requestId: string): { id: string; amount: number; startedAt: number } | null {
    const call = this.calls.get(requestId);
    return call === undefined ? null : { id: call.allotment.id, amount: call.amount, startedAt: call.startedAt };
  }

  /** The actor recalls allotment `id` (it is about to refuse a call, or to show the account). */
  recall(id: string): void {
    // Unknown here: already retired, and that retirement is on its way to the actor, which is what the recall waits for.
    const a = this.find(id);
    if (a !== null) this.retire(a);
  }

  /** Every allotment goes back (the worker is stopping). */
  close(): void {
    clearInterval(this.sweeper);
    for (const a of [...this.open.values()]) this.retire(a);
  }

  private sweep(): void {
    const now = this.clock();
    for (const a of [...this.open.values()]) {
      if (a.asking) continue;
      if (now - a.lastUsed >= IDLE_MS || now - a.openedAt >= MAX_AGE_MS) this.retire(a);
    }
  }

  private retire(a: Allotment): void {
    if (a.retired) return;
    a.retired = true;
    if (this.open.get(a.orgId + ' ' + a.funding) === a) this.open.delete(a.orgId + ' ' + a.funding);
    const inFlight = [...a.inFlight].map(([requestId, c]) => ({ requestId, amount: c.amount, startedAt: c.startedAt }));
    const unused = { second: a.second, slots: a.slots };
    a.money = 0;
    a.slots = 0;
    if (a.granted || a.asking) this.retired({ orgId: a.orgId, id: a.id, unused, inFlight });
  }

  private find(id: string): Allotment | null {
    for (const a of this.open.values()) if (a.id === id) return a;
    return null;
  }
}
