// The request quota of local operations (count_tokens), per organization and
// apart from the model-call quota (issue 30 item 4): the spec says
// count_tokens consumes no customer request quota, and the issue adds one of
// its own so that a key refused for model calls cannot go on loading the
// worker's pool with counts. billing.count_tokens_per_second / _per_minute,
// with the model-call quota's windows (ledger/quota.ts: one wall-clock
// second; the current second and the 59 before it).
//
// Counted per HTTP worker, like the key slots (key-slots.ts): a local
// operation reaches no other process, so neither does its quota. An instance
// therefore admits up to workers × the quota per organization.
import { GatewayError } from '../errors/gateway-error.js';
import { RequestQuota } from '../ledger/quota.js';

/** An organization idle this long has nothing left in either window: its counters are dropped. */
const IDLE_MS = 61_000;

interface Entry {
  quota: RequestQuota;
  lastMs: number;
}

export class LocalQuota {
  private readonly orgs = new Map<string, Entry>();
  private sweptAt = 0;

  constructor(
    readonly perSecond: number,
    readonly perMinute: number,
  ) {}

  /** Admits (and counts) one local operation of `orgId`, or refuses with 429 rate_limited and Retry-After. */
  admit(orgId: string, nowMs = Date.now()): void {
    this.sweep(nowMs);
    let entry = this.orgs.get(orgId);
    if (entry === undefined) {
      entry = { quota: new RequestQuota(this.perSecond, this.perMinute), lastMs: nowMs };
      this.orgs.set(orgId, entry);
    }
    entry.lastMs = nowMs;
    const refusal = entry.quota.admit(nowMs);
    if (refusal !== null) {
      throw new GatewayError('rate_limited', {
        retryAfterSeconds: refusal.retryAfterSeconds,
        limit: { kind: 'count_tokens_quota', window: refusal.window, limit: refusal.limit, retry_after_seconds: refusal.retryAfterSeconds },
      });
    }
  }

  /** Organizations with counters kept (for tests). */
  get size(): number {
    return this.orgs.size;
  }

  /** At most once a minute: forget organizations idle for a whole window, so the map holds only recent callers. */
  private sweep(nowMs: number): void {
    if (nowMs - this.sweptAt < IDLE_MS) return;
    this.sweptAt = nowMs;
    for (const [org, entry] of this.orgs) if (nowMs - entry.lastMs >= IDLE_MS) this.orgs.delete(org);
  }
}
