// The commands a ledger actor understands and what it answers, as plain JSON
// values: the same shapes travel over cluster IPC (embedded host) and, later,
// Redis streams. Amounts are integer micros; the actor never sees a price,
// only amounts the billing client computed from one.
import type { Funding } from '../money/money.js';

/** What the client asks; the transport stamps the owner. */
export interface ReserveRequest {
  requestId: string;
  orgId: string;
  funding: Funding;
  /** Micros to hold: the priced bound. */
  amount: number;
  /** What the worker would like allotted besides this call (allotments.ts). */
  allot?: AllotmentWant;
  /** The call's key has a request quota of its own (key-quotas.ts): such a call is never reserved from an allotment. */
  keyQuota?: KeyQuota;
}

/** A key's own request quota, as a reservation carries it. */
export interface KeyQuota {
  keyId: string;
  /** Calls per sliding minute, a whole number ≥ 1. */
  perMinute: number;
}

/**
 * A worker's request for an allotment: money and admissions it spends on its
 * own, with no round trip per call (src/ledger/allotments.ts). The actor
 * holds the money as one hold owned by the worker, and counts the admissions
 * in the current second when it grants them.
 */
export interface AllotmentWant {
  /** Chosen by the worker; the same id until the worker retires it. */
  id: string;
  /** Micros to add to it. 0: the worker has money enough, it needs admissions. */
  money: number;
  /** Admissions for the current second. */
  slots: number;
  /** Admissions of an earlier second the worker never used: they leave the quota's windows. */
  refund: { second: number; slots: number } | null;
  /** The worker's count of its asks for this allotment: a retirement names the one it saw no answer to (RetiredCommand.pendingAsk). */
  ask?: number;
}

/**
 * An ask for more allotment with no call of its own: a worker tops up an
 * allotment that is running low before it runs dry (allotments.ts), so its
 * calls keep being reserved there. `amount`: the bound of the call that
 * prompted it (a grant below it is none). Answered with what was granted, or null.
 */
export interface AllotCommand {
  orgId: string;
  funding: Funding;
  owner: string;
  amount: number;
  allot: AllotmentWant;
}

/** What the actor granted: `slots` admissions for wall-clock second `second` (ms since epoch ÷ 1000). */
export interface Allotted {
  money: number;
  slots: number;
  second: number;
}

/** One-way: the worker stopped spending allotment `id`; its calls still in progress become holds of their own, the rest is voided. */
export interface RetiredCommand {
  orgId: string;
  id: string;
  unused: { second: number; slots: number };
  /** With the last progress of a stream among them (kept in the worker's books until now: worker-books.ts). */
  inFlight: Array<{ requestId: string; amount: number; startedAt: number; progress?: UsageRow }>;
  /**
   * An ask for this allotment (AllotmentWant.ask) the worker sent and saw no
   * answer to (still on its way, or timed out): what the actor granted it
   * goes back with the allotment, its admissions too, and the worker ignores
   * the answer should it come.
   */
  pendingAsk?: number;
}

export interface ReserveCommand extends ReserveRequest {
  /** Who holds the hold: a worker process (embedded) or an instance (Redis). Its heartbeats renew the lease. */
  owner: string;
}

export type QuotaWindow = 'per_second' | 'per_minute';

export type ReserveReply =
  | { ok: true; allotted?: Allotted }
  /** `scope` 'key': the key's own quota refused (ReserveRequest.keyQuota), else the organization's. */
  | { ok: false; code: 'rate_limited'; retryAfterSeconds: number; window: QuotaWindow; limit: number; scope?: 'key' }
  | { ok: false; code: 'insufficient_funds'; funding: Funding; required: number; available: number; packageExpiredAt: string | null }
  | { ok: false; code: 'unknown_organization' }
  /** The request id was already settled or released: a reservation cannot reopen it. */
  | { ok: false; code: 'closed' };

/** One usage row; everything the store keeps about a finished call. Never content. */
export interface UsageRow {
  requestId: string;
  orgId: string;
  keyId: string;
  modelId: string;
  supplier: string | null;
  surface: string;
  funding: Funding;
  inputTokens: number;
  cachedInputTokens: number;
  outputTokens: number;
  imageUnits: number;
  reservedMicros: number;
  /** Everything the call cost, even above the hold. */
  chargedMicros: number;
  /** Set by the actor: the part of chargedMicros above the hold (the supplier reported more than was reserved). */
  overdraftMicros: number;
  outcome: string;
  meteredSource: string | null;
  /** Set by the actor: the settlement found no open hold (its lease had run out). */
  holdExpired: boolean;
  ttfbMs: number | null;
  totalMs: number;
  /** ms since epoch */
  finishedAt: number;
}

export interface SettleCommand {
  usage: UsageRow;
  /** Another writer may have stored this charge already (a direct write, a previous owner): the actor checks the store before it counts. */
  check?: boolean;
  /** The call was reserved from this allotment in its worker, not by a hold of its own. */
  allotment?: string;
}

/**
 * A stream still being delivered: the usage row it would settle on if its
 * worker died now (outcome 'interrupted', the charge an upper estimate of
 * what was delivered, at most the hold). Sent at a stream's first delivered
 * chunk, then at most once per PROGRESS_INTERVAL_MS (billing/billing.ts);
 * docs/billing.md "Interrupted streams".
 */
export interface ProgressCommand {
  usage: UsageRow;
  /** The call was reserved from this allotment in its worker (what it took, and when): its first progress makes it a hold of its own. */
  allotment?: { id: string; amount: number; startedAt: number };
}

/**
 * What a worker's calls served from its allotments spent, told once per
 * batch (worker-books.ts), not per call: the worker settled them itself and
 * writes their usage rows and charges to the store as batch `seq` of writer
 * `writer`. The actor moves each allotment's hold down by what its calls
 * took and the money by what they were charged.
 */
export interface SpentReport {
  writer: string;
  seq: number;
  spends: Spend[];
}

/** A gone writer's parts of the balances were folded into these organizations' rows (the Redis host: told to their shards' owners). */
export interface FoldedCommand {
  writer: string;
  orgIds: string[];
}

export interface Spend {
  orgId: string;
  funding: Funding;
  allotment: string;
  /** What the calls took from the allotment when they were reserved. */
  taken: number;
  /** What they were charged, overdraft included. */
  charged: number;
  /** The part of `charged` above what the calls took. */
  overdraft: number;
  calls: number;
}

export interface ReleaseCommand {
  requestId: string;
  orgId: string;
  /** As in SettleCommand, with what the call took from it. */
  allotment?: { id: string; amount: number };
}

export interface CreditCommand {
  orgId: string;
  /** Idempotency key of the credit; a repeat with the same key applies nothing. Null: a fresh credit. */
  key: string | null;
  amount: number;
  target: Funding;
  /** ISO timestamp; package credits only. Null keeps the current expiry. */
  expiresAt: string | null;
  note: string | null;
}

export type CreditReply =
  | { ok: true; entryId: string; replayed: false; account: AccountView }
  /** The key was used before: what that credit was, so the caller can tell a replay from a conflict. */
  | { ok: true; entryId: string; replayed: true; amount: number; target: Funding; account: AccountView }
  | { ok: false; code: 'unknown_organization' }
  /** The credit would take the balance or package above MAX_MICROS (money/money.ts): nothing was written. */
  | { ok: false; code: 'money_limit' };

/** An organization's money and quotas as its actor sees them right now. */
export interface AccountView {
  orgId: string;
  balance: number;
  heldBalance: number;
  package: number;
  heldPackage: number;
  /** ISO timestamp or null (never expires). */
  packageExpiresAt: string | null;
  packageExpired: boolean;
  openHolds: number;
  quotaPerSecond: number;
  quotaPerMinute: number;
  /** Whether each quota is the organization's own or the configured default. */
  quotaPerSecondIsDefault: boolean;
  quotaPerMinuteIsDefault: boolean;
}

/** What every host offers the processes that serve requests. */
export interface LedgerClient {
  reserve(req: ReserveRequest): Promise<ReserveReply>;
  /**
   * The common call's reservation, with no wait and no round trip: true when
   * an allotment of this process had room for it now, and it is reserved
   * there (what reserve() would answer { ok: true } at once); false: nothing
   * was done, reserve() is the way. A key with a quota of its own is never
   * reserved here (the actor counts its calls one by one: key-quotas.ts).
   */
  reserveHere(req: ReserveRequest): boolean;
  /** Resolves when the charge is as durable as billing.flush_ms promises. */
  settle(cmd: SettleCommand): Promise<void>;
  /** Voids a hold without a usage row (a reservation whose answer never reached the caller). */
  release(cmd: ReleaseCommand): Promise<void>;
  /** One-way, best effort: what a long stream has delivered so far (see ProgressCommand). */
  progress(cmd: ProgressCommand): void;
  /** Durable before it resolves, whatever flush_ms says. */
  credit(cmd: CreditCommand): Promise<CreditReply>;
  account(orgId: string): Promise<AccountView | null>;
  /** Reload an active organization from the store (its row was edited outside the ledger). */
  refresh(orgId: string): Promise<void>;
  /** Everything settled so far is in the store when this resolves. */
  sync(): Promise<void>;
  close(): Promise<void>;
  /** Series this client counts in its own process, summed with the primary's into /metrics (registry.ts SERIES names). */
  gauges?(): Record<string, number>;
}

/** The actors' side: what a host's transport delivers commands to. */
export interface LedgerCore {
  reserve(cmd: ReserveCommand): Promise<ReserveReply>;
  settle(cmd: SettleCommand): Promise<void>;
  release(cmd: ReleaseCommand): Promise<void>;
  progress(cmd: ProgressCommand): void;
  credit(cmd: CreditCommand): Promise<CreditReply>;
  account(orgId: string): Promise<AccountView | null>;
  refresh(orgId: string): Promise<void>;
  sync(): Promise<void>;
  /** The owner is alive: its holds' leases run from now. */
  heartbeat(owner: string): void;
}
