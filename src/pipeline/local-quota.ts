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
import { QuotaWindows } from '../ledger/quota.js';

export class LocalQuota {
  private readonly orgs = new QuotaWindows();

  constructor(
    readonly perSecond: number,
    readonly perMinute: number,
  ) {}

  /** Admits (and counts) one local operation of `orgId`, or refuses with 429 rate_limited and Retry-After. */
  admit(orgId: string, nowMs = Date.now()): void {
    const refusal = this.orgs.get(orgId, this.perSecond, this.perMinute, nowMs).admit(nowMs);
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
}
