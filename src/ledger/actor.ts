// One organization's ledger actor: its balance, package allowance, open holds
// and request quota, and the rules that move them. Pure state, no I/O: the
// host delivers one command at a time, so no two reservations of the same
// organization ever interleave and the same money cannot be held twice.
//
// Two-phase, like TigerBeetle's pending transfers: reserve creates a hold
// (pending), settle posts part of it and voids the rest, release voids it,
// and a hold whose lease runs out is voided by the host.
import { MAX_MICROS, type Funding } from '../money/money.js';
import { ActorAllotments } from './actor-allotments.js';
import { KeyQuotas } from './key-quotas.js';
import { RequestQuota } from './quota.js';
import type { AccountView, ReserveCommand, ReserveReply, UsageRow } from './protocol.js';
import { chargeAgainst, chargeEntry, type AccountRow, type Entry, type HoldRecord, type QuotaDefaults, type WriteResult } from './records.js';

/**
 * How long (and how many) settled request ids are remembered, so a repeated
 * settlement (a client's retry, seconds later) is a no-op without a store
 * round trip. Older repeats are late settlements, checked against the store
 * before they count (Ledger.settle), and the journal's unique key refuses them
 * anyway, so this is a cache, not the guard.
 */
const SETTLED_MEMORY_MS = 60_000;
const SETTLED_MEMORY_MAX = 100_000;

export class OrgActor {
  balance = 0;
  package = 0;
  packageExpiresAt: number | null = null;
  heldBalance = 0;
  heldPackage = 0;
  readonly holds = new Map<string, HoldRecord>();
  /** Settled or released request id → when; a repeat is a no-op. Older ids are left to the journal's unique key. */
  private readonly closed = new Map<string, number>();
  /** Money moved in memory that the store has not confirmed yet (see refresh). */
  unflushedBalance = 0;
  unflushedPackage = 0;
  pendingWrites = 0;
  /**
   * Charges applied here and not yet answered for by the store, by entry id.
   * Another writer (a worker that wrote its settlement directly while Redis
   * was away, a shard's previous owner) may have stored the same entry; a
   * load that finds it journaled moves it from unflushed into the loaded
   * balance (`absorbed`), so it is never counted twice.
   */
  private readonly pending = new Map<string, Entry>();
  private readonly absorbed = new Set<string>();
  /**
   * Workers' batches heard of (Ledger.spent) and not yet counted by a load,
   * by writer: their money moved here already, and is in `unflushed` until a
   * load reads that writer's part at or past the batch's seq. `storedSeqs`:
   * each writer's seq as the last load read it (a batch at or below it was
   * already counted by that load, so hearing of it moves nothing).
   */
  private readonly writerBatches = new Map<string, Array<{ seq: number; balance: number; package: number }>>();
  private storedSeqs: ReadonlyMap<string, number> = new Map();
  lastUsed = 0;
  private readonly quota = new RequestQuota(1, 1);
  private ownQuotaSecond = false;
  private ownQuotaMinute = false;
  /** Keys' own quotas, checked before the organization's (key-quotas.ts). */
  readonly keyQuotas = new KeyQuotas();
  /** Workers' allotments among `holds`, and the calls carved from them (actor-allotments.ts). */
  readonly allotments = new ActorAllotments(this, this.quota);

  constructor(
    readonly orgId: string,
    row: AccountRow,
    private readonly defaults: QuotaDefaults,
  ) {
    this.load(row);
  }

  /** Takes the store's row as truth, keeping what memory has moved but the store has not seen yet. */
  load(row: AccountRow): void {
    for (const id of row.journaled ?? []) {
      const entry = this.pending.get(id);
      if (entry === undefined || this.absorbed.has(id)) continue;
      this.absorbed.add(id);
      if (entry.funding === 'balance') this.unflushedBalance -= entry.amount;
      else this.unflushedPackage -= entry.amount;
    }
    const seqs = row.writerSeqs ?? new Map<string, number>();
    for (const [writer, batches] of this.writerBatches) {
      const stored = seqs.get(writer) ?? -1;
      while (batches.length > 0 && batches[0].seq <= stored) this.uncount(batches.shift()!);
      if (batches.length === 0) this.writerBatches.delete(writer);
    }
    this.storedSeqs = seqs;
    this.balance = row.balance + this.unflushedBalance;
    this.package = row.package + this.unflushedPackage;
    this.packageExpiresAt = row.packageExpiresAt;
    this.ownQuotaSecond = row.quotaPerSecond !== null;
    this.ownQuotaMinute = row.quotaPerMinute !== null;
    this.quota.perSecond = row.quotaPerSecond ?? this.defaults.perSecond;
    this.quota.perMinute = row.quotaPerMinute ?? this.defaults.perMinute;
  }

  packageExpired(now: number): boolean {
    return this.packageExpiresAt !== null && this.packageExpiresAt <= now;
  }

  /**
   * Admission (quota), then the hold: one step, so a refused hold never
   * half-happens. `admitted`: the quota already counted this request (it was
   * refused for funds, and is asked again once the allotments are back).
   */
  reserve(cmd: ReserveCommand, now: number, admitted = false): ReserveReply {
    this.lastUsed = now;
    if (this.holds.has(cmd.requestId)) return { ok: true }; // a retried reservation holds once
    if (this.closed.has(cmd.requestId)) return { ok: false, code: 'closed' };
    if (cmd.allot?.refund) this.quota.refund(cmd.allot.refund.second, cmd.allot.refund.slots);
    const reply = this.hold(cmd, now, admitted);
    // A key's quota refuses that key only: the organization's allotments go on as they were.
    if (!reply.ok && !(reply.code === 'rate_limited' && reply.scope === 'key')) this.allotments.refused(now);
    else if (cmd.allot !== undefined) {
      const allotted = this.allotments.grant(cmd, cmd.allot, now);
      if (allotted !== null) return { ok: true, allotted };
    }
    return reply;
  }

  private hold(cmd: ReserveCommand, now: number, admitted: boolean): ReserveReply {
    // The key's window first, then the organization's; a call refused by either counts in neither.
    const key = admitted ? undefined : cmd.keyQuota;
    if (key !== undefined) {
      const refused = this.keyQuotas.admit(key.keyId, key.perMinute, now);
      if (refused !== null) return { ok: false, code: 'rate_limited', ...refused, scope: 'key' };
    }
    const refusal = admitted ? null : this.quota.admit(now);
    if (refusal !== null) {
      if (key !== undefined) this.keyQuotas.refund(key.keyId, now);
      return { ok: false, code: 'rate_limited', ...refusal };
    }
    // No silent fallback: the funding source the key names is the only one looked at.
    const expired = cmd.funding === 'package' && this.packageExpired(now);
    const available = cmd.funding === 'balance' ? this.balance - this.heldBalance : expired ? 0 : this.package - this.heldPackage;
    // `available >= amount` with amount >= 0 also refuses an organization in debt.
    if (expired || available < cmd.amount) {
      return {
        ok: false,
        code: 'insufficient_funds',
        funding: cmd.funding,
        required: cmd.amount,
        available: Math.max(0, available),
        packageExpiredAt: expired ? new Date(this.packageExpiresAt!).toISOString() : null,
      };
    }
    const hold: HoldRecord = { orgId: this.orgId, requestId: cmd.requestId, funding: cmd.funding, amount: cmd.amount, owner: cmd.owner, createdAt: now };
    this.holds.set(cmd.requestId, hold);
    if (hold.funding === 'balance') this.heldBalance += hold.amount;
    else this.heldPackage += hold.amount;
    return { ok: true };
  }

  /**
   * Posts the charge and voids the rest of the hold. Null for a repeat. The
   * whole charge is posted even when it is above the hold (the supplier
   * reported more than the bound): the part above is the usage row's
   * overdraft. A settlement whose hold already expired still charges,
   * straight from the funding source. Either can leave the funding source
   * below zero (a debt that refuses new reservations until credits cover it),
   * because the money above the hold may be held by other calls.
   * `journaled`: the store already holds this charge and the last load
   * counted it (another writer stored it): the hold closes, nothing moves.
   */
  settle(usage: UsageRow, now: number, journaled = false, allotment: string | null = null): { hold: HoldRecord | null; entry: Entry | null } | null {
    this.lastUsed = now;
    if (this.closed.has(usage.requestId)) return null;
    this.close(usage.requestId, now);
    const hold = this.unhold(usage.requestId);
    // A call its worker reserved from an allotment is held there until now.
    const fromAllotment = hold === null && allotment !== null && this.allotments.spend(allotment, usage.reservedMicros);
    usage.holdExpired = hold === null && !fromAllotment;
    chargeAgainst(usage, hold !== null ? hold.amount : usage.reservedMicros);
    if (usage.chargedMicros === 0 || journaled) return { hold, entry: null };
    const entry = chargeEntry(usage);
    this.apply(entry);
    return { hold, entry };
  }

  /**
   * A worker charged `balance`/`package` micros (negative: spent) in its
   * batch `seq`, and writes them to its part of the store (Ledger.spent).
   * Counted now unless the last load already read that batch.
   */
  writerCharged(writer: string, seq: number, balance: number, pkg: number): void {
    if (seq <= (this.storedSeqs.get(writer) ?? -1)) return;
    this.balance += balance;
    this.package += pkg;
    this.unflushedBalance += balance;
    this.unflushedPackage += pkg;
    let batches = this.writerBatches.get(writer);
    if (batches === undefined) this.writerBatches.set(writer, (batches = []));
    const last = batches[batches.length - 1];
    if (last !== undefined && last.seq === seq) {
      last.balance += balance;
      last.package += pkg;
    } else batches.push({ seq, balance, package: pkg });
  }

  /** Writer `writer`'s batches are all in the store and its parts folded into the organization's row (Ledger.writerGone): memory stops counting them apart. */
  writerFolded(writer: string): void {
    for (const b of this.writerBatches.get(writer) ?? []) this.uncount(b);
    this.writerBatches.delete(writer);
  }

  private uncount(batch: { balance: number; package: number }): void {
    this.unflushedBalance -= batch.balance;
    this.unflushedPackage -= batch.package;
  }

  /** Settled or released here within the memory window. */
  isClosed(requestId: string): boolean {
    return this.closed.has(requestId);
  }

  /** Records a stream's progress on its open hold (never more than the hold); null when the hold is not open here. */
  progress(usage: UsageRow): HoldRecord | null {
    const hold = this.holds.get(usage.requestId);
    if (hold === undefined || !Number.isSafeInteger(usage.chargedMicros)) return null;
    hold.progress = { ...usage, chargedMicros: Math.min(Math.max(0, usage.chargedMicros), hold.amount), overdraftMicros: 0 };
    return hold;
  }

  /** Voids a hold without charging (a call reserved from an allotment gives back what it took there). */
  release(requestId: string, now: number, allotment: { id: string; amount: number } | null = null): HoldRecord | null {
    this.lastUsed = now;
    if (allotment !== null && !this.holds.has(requestId) && !this.closed.has(requestId)) this.allotments.spend(allotment.id, allotment.amount);
    this.close(requestId, now);
    return this.unhold(requestId);
  }

  /** A hold made by another host (a shard changed owner); false when it is already known or closed. */
  adopt(hold: HoldRecord): boolean {
    if (this.holds.has(hold.requestId) || this.closed.has(hold.requestId)) return false;
    this.holds.set(hold.requestId, hold);
    if (hold.allotment === true) this.allotments.open++;
    if (hold.carved === true) this.allotments.carved++;
    if (hold.funding === 'balance') this.heldBalance += hold.amount;
    else this.heldPackage += hold.amount;
    return true;
  }

  /** Takes the hold out of `holds` and what it held out of the held money (also an allotment's retirement: actor-allotments.ts). */
  unhold(requestId: string): HoldRecord | null {
    const hold = this.holds.get(requestId);
    if (hold === undefined) return null;
    this.holds.delete(requestId);
    if (hold.allotment === true) this.allotments.open--;
    if (hold.carved === true) this.allotments.carved--;
    if (hold.funding === 'balance') this.heldBalance -= hold.amount;
    else this.heldPackage -= hold.amount;
    return hold;
  }

  /**
   * Whether these credit entries would take the balance or package above
   * MAX_MICROS, the most that stays exact. Memory may lag the store only by
   * charges not yet written (which lower it), and the store's CHECK refuses
   * the rest, so a credit is never applied past the maximum.
   */
  exceedsLimit(entries: Entry[]): boolean {
    let balance = this.balance;
    let pkg = this.package;
    for (const e of entries) {
      if (e.funding === 'balance') balance += e.amount;
      else pkg += e.amount;
    }
    return balance > MAX_MICROS || pkg > MAX_MICROS;
  }

  /**
   * Entries for a credit the store has already written (credits are durable
   * before they count). A package credit on an expired package forfeits what
   * was left of it first: an allowance does not come back to life.
   */
  creditEntries(id: string, amount: number, target: Funding, expiresAt: string | null, note: string | null, now: number): Entry[] {
    const entries: Entry[] = [];
    if (target === 'package' && this.packageExpired(now) && this.package > 0) {
      entries.push({ id: 'forfeit:' + id, orgId: this.orgId, kind: 'forfeit', funding: 'package', amount: -this.package, requestId: null, expiresAt: null, note: null });
    }
    entries.push({ id, orgId: this.orgId, kind: 'credit', funding: target, amount, requestId: null, expiresAt: target === 'package' ? expiresAt : null, note });
    return entries;
  }

  /** The store wrote these entries: count them (no unflushed bookkeeping, they are already durable). */
  credited(entries: Entry[]): void {
    for (const e of entries) {
      if (e.funding === 'balance') this.balance += e.amount;
      else this.package += e.amount;
      if (e.kind === 'credit' && e.expiresAt !== null) this.packageExpiresAt = Date.parse(e.expiresAt);
    }
  }

  /** Ids of the charges applied here that the store has not answered for (a load asks whether they are journaled). */
  pendingIds(): string[] {
    const out: string[] = [];
    for (const id of this.pending.keys()) if (!this.absorbed.has(id)) out.push(id);
    return out;
  }

  /** Moves money in memory and counts it as not yet confirmed by the store. */
  apply(entry: Entry): void {
    this.pending.set(entry.id, entry);
    if (entry.funding === 'balance') {
      this.balance += entry.amount;
      this.unflushedBalance += entry.amount;
    } else {
      this.package += entry.amount;
      this.unflushedPackage += entry.amount;
    }
    this.pendingWrites++;
  }

  /**
   * The store answered for an entry. Inserted, or already there (another
   * writer stored it after the last load, which therefore did not count it:
   * memory's charge is the one that counts), it stays; refused as unwritable,
   * it is undone. An entry a load absorbed is already in the loaded balance.
   * True for a duplicate no load saw: the host re-reads the row to be sure.
   */
  confirmed(entry: Entry, result: WriteResult): boolean {
    this.pending.delete(entry.id);
    this.pendingWrites--;
    if (this.absorbed.delete(entry.id)) return false;
    const undo = result === 'dropped' ? entry.amount : 0;
    if (entry.funding === 'balance') {
      this.unflushedBalance -= entry.amount;
      this.balance -= undo;
    } else {
      this.unflushedPackage -= entry.amount;
      this.package -= undo;
    }
    return result === 'duplicate';
  }

  /** Forgets settled ids older than the memory window, or the oldest beyond its size. */
  prune(now: number): void {
    let over = this.closed.size - SETTLED_MEMORY_MAX;
    for (const [id, at] of this.closed) {
      if (over <= 0 && at > now - SETTLED_MEMORY_MS) break; // insertion order is time order
      this.closed.delete(id);
      over--;
    }
  }

  /** Remembers `requestId` as settled or released (or an allotment as retired: actor-allotments.ts), so a repeat is a no-op. */
  close(requestId: string, now: number): void {
    this.closed.set(requestId, now);
    if (this.closed.size > SETTLED_MEMORY_MAX + 1000) this.prune(now);
  }

  idle(now: number, idleMs: number): boolean {
    return this.holds.size === 0 && this.pendingWrites === 0 && this.writerBatches.size === 0 && this.lastUsed < now - idleMs;
  }

  view(now: number): AccountView {
    return {
      orgId: this.orgId,
      balance: this.balance,
      heldBalance: this.heldBalance,
      package: this.package,
      heldPackage: this.heldPackage,
      packageExpiresAt: this.packageExpiresAt === null ? null : new Date(this.packageExpiresAt).toISOString(),
      packageExpired: this.packageExpired(now),
      openHolds: this.holds.size - this.allotments.open,
      quotaPerSecond: this.quota.perSecond,
      quotaPerMinute: this.quota.perMinute,
      quotaPerSecondIsDefault: !this.ownQuotaSecond,
      quotaPerMinuteIsDefault: !this.ownQuotaMinute,
    };
  }
}
