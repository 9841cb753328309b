// The actors' home: activates an organization's actor from the store on its
// first command, hands it one command at a time, writes settlements through
// the journal and evicts actors that have gone idle. Transport-free: a host
// (embedded IPC, or Redis streams) delivers commands here.
//
// Holds end when their owner's lease lapses (leases.ts says who holds what),
// and never outlive billing.hold_max_ms, so a call that never settles cannot
// keep money held while its worker lives on (expiry.ts says how they end).
import type { Logger } from '../log/logger.js';
import { OrgActor } from './actor.js';
import { Expiry } from './expiry.js';
import { capped, Journal } from './journal.js';
import { LateChecks, SETTLE_CHECK_AFTER_MS } from './late-checks.js';
import { Leases } from './leases.js';
import { Recalls } from './recalls.js';
import { holdTotals, type LedgerStats } from './stats.js';
import { StoreGate } from './store-gate.js';
import type { AllotCommand, Allotted, AccountView, CreditCommand, CreditReply, LedgerCore, ReleaseCommand, ProgressCommand, ReserveCommand, ReserveReply, RetiredCommand, SettleCommand, SpentReport, FoldedCommand } from './protocol.js';
import type { Unwritten } from './books-file.js';
import { WorkerReports } from './worker-reports.js';
import { applyCredit } from './credit.js';
import type { HoldRecord } from './records.js';
import type { LedgerStore } from './store.js';

export interface LedgerSettings {
  flushMs: number;
  /** billing.journal_max_lag_ms: past this, new reservations wait for the store (see reserve). */
  journalMaxLagMs: number;
  holdLeaseMs: number;
  holdMaxMs: number;
  quotaPerSecond: number;
  quotaPerMinute: number;
}

/** An actor with no holds, nothing unwritten and no command for this long is dropped (and reloaded from the store when needed). */
const ACTOR_IDLE_MS = 120_000;
/** flush_ms = 0 waits for the write, but not forever: a store outage must not hang every call. */
const DURABLE_WAIT_MAX_MS = 10_000;
/** How often idle actors are evicted, and every hold (not only each organization's oldest) checked against billing.hold_max_ms. */
const SLOW_SWEEP_MS = 5000;
/**
 * How often active actors re-read their rows. Anything that changes an
 * organization behind the ledger's back (the `tollgate credit` command, which
 * cannot reach this process; an operator's SQL; a quota edit) reaches the
 * running actor within this interval; the console API reaches it at once.
 */
const RECONCILE_MS = 1000;
/** Settlements older than this are checked against the store first (late-checks.ts). */
export { SETTLE_CHECK_AFTER_MS } from './late-checks.js';

export class Ledger implements LedgerCore {
  private readonly actors = new Map<string, OrgActor>();
  private readonly loading = new Map<string, Promise<OrgActor | null>>();
  private readonly leases: Leases;
  /** Settlements not yet written: a repeat waits for the same write. */
  private readonly unwritten = new Map<string, Promise<void>>();
  private readonly journal: Journal;
  private readonly sweeper: NodeJS.Timeout;
  private readonly reconciler: NodeJS.Timeout;
  private lastSlowSweep = 0;
  private readonly expiry: Expiry;
  private rechecking: Promise<void> = Promise.resolve();
  /** Since start: money charged above holds and in how many settlements, reservations answered (each a worker's round trip), allotments granted or topped up. */
  private readonly counts = { overdraftMicros: 0, overdraftSettlements: 0, reservations: 0, grants: 0 };
  private readonly lateChecks: LateChecks;
  private readonly storeGate: StoreGate;
  /** Told of every hold voided by its lease or maximum age, and of every allotment voided with its owner (the Redis host drops it from its mirror). */
  onHoldExpired: ((hold: HoldRecord) => void) | null = null;
  /** Allotments asked back from their workers (the host sets how: `recalls.recaller`). */
  readonly recalls = new Recalls();
  /** What workers settle themselves and tell here per batch (worker-reports.ts). */
  private readonly workers: WorkerReports;

  constructor(
    private readonly store: LedgerStore,
    private readonly settings: LedgerSettings,
    private readonly logger: Logger,
    private readonly clock: () => number = Date.now,
  ) {
    this.journal = new Journal(store, settings.flushMs, logger, (entry, result) => {
      if (this.actors.get(entry.orgId)?.confirmed(entry, result) === true) this.recheck(entry.orgId);
    });
    this.leases = new Leases(settings.holdLeaseMs);
    this.lateChecks = new LateChecks(store, this.journal, logger, clock);
    this.storeGate = new StoreGate(this.journal, settings.journalMaxLagMs, logger);
    this.expiry = new Expiry(this, this.actors, this.leases, this.recalls, settings, logger, clock);
    this.sweeper = setInterval(() => this.sweep(), this.expiry.sweepEveryMs);
    this.sweeper.unref();
    this.reconciler = setInterval(() => void this.reconcile().catch(() => {}), RECONCILE_MS);
    this.reconciler.unref();
    this.workers = new WorkerReports({
      store,
      logger,
      clock,
      active: (orgId) => this.actors.get(orgId),
      activate: (orgId) => this.activate(orgId),
      actors: () => this.actors.values(),
      exclusive: (fn) => this.journal.exclusive(fn),
    });
  }

  async reserve(cmd: ReserveCommand): Promise<ReserveReply> {
    this.counts.reservations++;
    if (this.storeGate.closed) await this.storeGate.wait(); // the store is behind (store-gate.ts)
    const actor = this.actors.get(cmd.orgId) ?? (await this.activate(cmd.orgId));
    if (actor === null) return { ok: false, code: 'unknown_organization' };
    let reply = this.hold(actor, cmd);
    // A key's own quota is not what allotments hold: only the organization's refusals wait for them.
    const funds = !reply.ok && reply.code === 'insufficient_funds';
    if ((funds || (!reply.ok && reply.code === 'rate_limited' && reply.scope !== 'key')) && actor.allotments.open > 0) {
      // What workers hold in allotments may be what this call lacks: a refusal counts only once they are back.
      await this.recalls.all(actor, this.clock());
      reply = this.hold(actor, cmd, funds);
    }
    if (reply.ok && reply.allotted !== undefined) this.counts.grants++;
    return reply;
  }

  /** A worker tops up its allotment before it runs dry (AllotCommand): what was granted, or null (nothing, and no call refused for it). */
  async allot(cmd: AllotCommand): Promise<Allotted | null> {
    if (this.storeGate.closed) return null; // the store is behind: new money goes out call by call, through the gate
    const actor = this.actors.get(cmd.orgId) ?? (await this.activate(cmd.orgId));
    if (actor === null) return null;
    const now = this.clock();
    this.leases.beat(cmd.owner, now);
    const allotted = actor.allotments.topUp(cmd, now);
    if (allotted === null) return null;
    this.counts.grants++;
    this.leases.add(actor.allotments.get(cmd.allot.id)!, now);
    return allotted;
  }

  private hold(actor: OrgActor, cmd: ReserveCommand, admitted = false): ReserveReply {
    const now = this.clock();
    this.leases.beat(cmd.owner, now);
    const reply = actor.reserve(cmd, now, admitted);
    if (reply.ok) {
      this.leases.add(actor.holds.get(cmd.requestId)!, now);
      if (reply.allotted !== undefined) this.leases.add(actor.allotments.get(cmd.allot!.id)!, now);
    }
    return reply;
  }

  /**
   * The worker stopped spending an allotment (idle, aged, recalled, or
   * exiting): its calls still in progress become holds of their own, the
   * rest is voided. Delivered in order with the worker's settlements, so a
   * call it settled before retiring is not among `inFlight`. Answers the
   * holds carved for those calls (the Redis host mirrors them).
   */
  async retired(cmd: RetiredCommand): Promise<HoldRecord[]> {
    const actor = this.actors.get(cmd.orgId) ?? (await this.activate(cmd.orgId));
    const carved: HoldRecord[] = [];
    if (actor !== null) {
      const now = this.clock();
      for (const call of cmd.inFlight) {
        const hold = actor.allotments.carve(cmd.id, call.requestId, call.amount, call.startedAt);
        if (hold === null) continue;
        if (call.progress !== undefined) actor.progress(call.progress);
        this.leases.add(hold, now);
        carved.push(hold);
      }
      const allotment = actor.allotments.retire(cmd.id, cmd.unused, now, cmd.pendingAsk);
      if (allotment !== null) this.leases.drop(allotment);
    }
    this.recalls.gone(cmd.id);
    return carved;
  }

  async settle(cmd: SettleCommand): Promise<void> {
    const usage = cmd.usage;
    const actor = this.actors.get(usage.orgId) ?? (await this.activate(usage.orgId));
    if (actor === null) {
      this.logger.warn({ rid: usage.requestId, org: usage.orgId }, 'ledger: settlement for an unknown organization ignored');
      return;
    }
    const now = this.clock();
    const late = cmd.check === true || now - usage.finishedAt > SETTLE_CHECK_AFTER_MS;
    const allotment = cmd.allotment ?? null;
    const out = late && !actor.isClosed(usage.requestId) ? await this.lateChecks.settle(actor, usage, allotment) : actor.settle(usage, now, false, allotment);
    if (out === null) {
      await this.unwritten.get(usage.requestId);
      return;
    }
    if (out.hold !== null) this.leases.drop(out.hold);
    else this.leases.takeOrphan(usage.requestId);
    if (out.entry !== null && usage.overdraftMicros > 0) {
      this.counts.overdraftMicros += usage.overdraftMicros;
      this.counts.overdraftSettlements++;
    }
    const written = this.journal.append(usage, out.entry).then(() => void this.unwritten.delete(usage.requestId));
    this.unwritten.set(usage.requestId, written);
    if (this.settings.flushMs === 0) await capped(written, DURABLE_WAIT_MAX_MS);
  }

  /** A worker's batch of calls it settled itself (worker-reports.ts). */
  spent(report: SpentReport): Promise<void> {
    return this.workers.spent(report);
  }

  /** A gone writer's parts were folded into these organizations' rows by another process (the Redis host: redis/gone-writers.ts): counted once again. */
  async folded(cmd: FoldedCommand): Promise<void> {
    await Promise.all(this.workers.folded(cmd).map((orgId) => this.refresh(orgId)));
  }

  /** Worker `pid` is gone: what its books' file holds is counted (resolves then) and written (worker-reports.ts). */
  writersGone(pid: number, found: Unwritten[]): Promise<void> {
    return this.workers.writersGone(pid, found);
  }

  /** A stream's progress, kept on its hold; the hold (null if not open here) so a host can mirror it. */
  progress(cmd: ProgressCommand): HoldRecord | null {
    const actor = this.actors.get(cmd.usage.orgId);
    if (actor === undefined) return null;
    if (cmd.allotment !== undefined) {
      // A stream reserved from an allotment: from its first progress on it is a hold of its own, so that it is settled on its progress if its worker dies.
      const carved = actor.allotments.carve(cmd.allotment.id, cmd.usage.requestId, cmd.allotment.amount, cmd.allotment.startedAt);
      if (carved !== null) this.leases.add(carved, this.clock());
    }
    return actor.progress(cmd.usage);
  }

  async release(cmd: ReleaseCommand): Promise<void> {
    const actor = this.actors.get(cmd.orgId) ?? (await this.activate(cmd.orgId));
    const hold = actor?.release(cmd.requestId, this.clock(), cmd.allotment ?? null) ?? null;
    if (hold !== null) this.leases.drop(hold);
  }

  async credit(cmd: CreditCommand): Promise<CreditReply> {
    const actor = this.actors.get(cmd.orgId) ?? (await this.activate(cmd.orgId));
    if (actor === null) return { ok: false, code: 'unknown_organization' };
    return applyCredit(actor, cmd, { store: this.store, journal: this.journal, clock: this.clock, reload: (a) => this.reload(a), refresh: (orgId) => this.refresh(orgId) });
  }

  /**
   * Recalls the organization's allotments first, so that what it shows held
   * is what its calls in progress hold; none is granted from now until the
   * view is read (ActorAllotments.viewStarted), or one granted to a call
   * arriving meanwhile would show.
   */
  async account(orgId: string): Promise<AccountView | null> {
    const actor = this.actors.get(orgId) ?? (await this.activate(orgId));
    if (actor === null) return null;
    actor.allotments.viewStarted();
    try {
      if (actor.allotments.open > 0) await this.recalls.all(actor, this.clock());
      return actor.view(this.clock());
    } finally {
      actor.allotments.viewRead();
    }
  }

  async refresh(orgId: string): Promise<void> {
    const actor = this.actors.get(orgId);
    if (actor !== undefined) await this.journal.exclusive(() => this.reload(actor));
  }

  /**
   * Re-reads every active organization's row and takes it as truth (plus what
   * memory has not written yet). Under the journal's lock, so no charge is
   * half-written while the rows are read.
   */
  reconcile(): Promise<void> {
    if (this.actors.size === 0) return Promise.resolve();
    return this.journal.exclusive(async () => {
      const rows = await this.store.loadAccounts([...this.actors.keys()], [...this.actors.values()].flatMap((a) => a.pendingIds()));
      for (const [orgId, row] of rows) this.actors.get(orgId)?.load(row);
    });
  }

  async sync(): Promise<void> {
    await this.journal.flush();
    await this.rechecking;
  }

  /**
   * A charge the store already held that no load had counted: by the rules
   * above that is another writer's, stored after the last load, so memory's
   * charge stands; the row is read again at once, not at the next reconcile,
   * in case a writer nobody foresaw stored it earlier.
   */
  private recheck(orgId: string): void {
    this.rechecking = this.rechecking.then(() => this.refresh(orgId)).catch(() => {});
  }

  heartbeat(owner: string): void {
    this.leases.beat(owner, this.clock());
  }

  /** The owner's process is known to be gone: its holds end now, not a lease later (Expiry.ownerGone). */
  ownerGone(id: string): void {
    this.expiry.ownerGone(id);
  }

  /** The write carrying this request's settlement, while it is queued; undefined once written (or when there was none). */
  written(requestId: string): Promise<void> | undefined {
    return this.unwritten.get(requestId);
  }

  /** Every open hold, workers' allotments too (the Redis host mirrors them so that the next owner of a shard can adopt them). */
  openHolds(): HoldRecord[] {
    const out: HoldRecord[] = [];
    for (const actor of this.actors.values()) for (const hold of actor.holds.values()) out.push(hold);
    return out;
  }

  /** The open hold (or allotment) `id` of an active organization, or null. */
  openHold(orgId: string, id: string): HoldRecord | null {
    return this.actors.get(orgId)?.holds.get(id) ?? null;
  }

  /**
   * Takes over holds another host made (a shard changed owner). Their owners'
   * leases run from now, so the holds of a dead owner go one lease later.
   * Answers how many were adopted (unknown organizations and repeats are skipped).
   */
  async adopt(holds: HoldRecord[]): Promise<number> {
    const actors = await Promise.all(holds.map((h) => this.actors.get(h.orgId) ?? this.activate(h.orgId)));
    const now = this.clock();
    let adopted = 0;
    holds.forEach((hold, i) => {
      if (actors[i]?.adopt(hold) !== true) return;
      this.leases.add(hold, now);
      adopted++;
    });
    return adopted;
  }

  stats(): LedgerStats {
    return {
      actors: this.actors.size,
      owners: this.leases.ownerCount,
      expiredHolds: this.expiry.expiredHolds,
      ...holdTotals(this.actors.values(), this.clock()),
      backlog: this.journal.backlog,
      flushLagMs: this.journal.lagMs(this.clock()),
      overdraftMicros: this.counts.overdraftMicros + this.workers.overdraftMicros,
      overdraftSettlements: this.counts.overdraftSettlements + this.workers.overdraftSettlements,
      progressSettled: this.expiry.progressSettled,
      workerSettled: this.workers.settled,
      reservations: this.counts.reservations,
      grants: this.counts.grants,
      storeWaits: this.storeGate.waits,
      storeRefusals: this.storeGate.refusals,
      storeCopyWrites: this.store.writePaths?.copy ?? 0,
      storeStatementWrites: this.store.writePaths?.statement ?? 0,
    };
  }

  /** Stops the lease clock and writes what is queued. */
  async close(): Promise<void> {
    clearInterval(this.sweeper);
    clearInterval(this.reconciler);
    await this.workers.close();
    await this.journal.close();
  }

  /** Ends the holds of owners whose lease ran out and of holds past their maximum age (expiry.ts); evicts idle actors. */
  sweep(): void {
    const now = this.clock();
    this.expiry.lapse(now);
    const slow = now - this.lastSlowSweep >= SLOW_SWEEP_MS;
    if (slow) this.lastSlowSweep = now;
    for (const [orgId, actor] of this.actors) {
      this.expiry.ageOut(actor, now, slow);
      if (!slow) continue;
      actor.prune(now);
      if (actor.idle(now, ACTOR_IDLE_MS)) this.actors.delete(orgId);
    }
  }

  /** One load per organization, however many commands arrive while it runs. */
  private activate(orgId: string): Promise<OrgActor | null> {
    let pending = this.loading.get(orgId);
    if (pending === undefined) {
      pending = this.store.loadAccount(orgId).finally(() => this.loading.delete(orgId)).then((row) => {
        if (row === null) return null;
        let actor = this.actors.get(orgId);
        if (actor === undefined) {
          actor = new OrgActor(orgId, row, { perSecond: this.settings.quotaPerSecond, perMinute: this.settings.quotaPerMinute });
          actor.lastUsed = this.clock();
          this.actors.set(orgId, actor);
        }
        return actor;
      });
      this.loading.set(orgId, pending);
    }
    return pending;
  }

  /** Call with the journal's lock held. */
  private async reload(actor: OrgActor): Promise<void> {
    const row = (await this.store.loadAccounts([actor.orgId], actor.pendingIds())).get(actor.orgId);
    if (row !== undefined) actor.load(row);
  }
}
