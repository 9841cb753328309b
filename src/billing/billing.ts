// The Billing the pipeline calls, over any ledger host. Prices are applied
// here, in the worker (pure integer maths, spread over every worker); the
// actor only ever sees amounts in micros.
import type { ApiKey } from '../auth/types.js';
import type { CatalogModel } from '../catalog/types.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { LedgerClient, ReserveReply, UsageRow } from '../ledger/protocol.js';
import type { Logger } from '../log/logger.js';
import type { Metrics } from '../metrics/registry.js';
import { formatMoney } from '../money/money.js';
import { boundCost, settlementCharge, type Charge } from './pricing.js';
import type { Billing, Bound, Hold, Metered, Outcome, Surface, TighterBound, Timings } from './types.js';

/** A settlement is retried (it is idempotent by request id) this many times before it is logged as lost. */
const SETTLE_ATTEMPTS = 4;
const SETTLE_RETRY_MS = 500;
const MAX_MS = 2_147_483_647;
/** After its first delivered chunk, a stream reports its progress to the ledger at most this often. */
export const PROGRESS_INTERVAL_MS = 1000;

export interface BillingDeps {
  ledger: LedgerClient;
  logger: Logger;
  metrics?: Metrics | null;
}

function wholeMs(ms: number | null): number | null {
  if (ms === null || !Number.isFinite(ms)) return null;
  return Math.min(MAX_MS, Math.max(0, Math.round(ms)));
}

/** A refusal from the actor, as the error the surfaces render (REST envelopes carry `limit`). */
export function refusal(reply: Exclude<ReserveReply, { ok: true }>): GatewayError {
  switch (reply.code) {
    case 'rate_limited':
      return new GatewayError('rate_limited', {
        retryAfterSeconds: reply.retryAfterSeconds,
        limit: { kind: 'request_quota', window: reply.window, limit: reply.limit, retry_after_seconds: reply.retryAfterSeconds },
      });
    case 'insufficient_funds':
      return new GatewayError('insufficient_funds', {
        limit: {
          kind: 'funds',
          funding: reply.funding,
          required: formatMoney(reply.required),
          available: formatMoney(reply.available),
          ...(reply.packageExpiredAt !== null ? { package_expired_at: reply.packageExpiredAt } : {}),
        },
      });
    default:
      // An organization that vanished under a live key, or a request id used twice: our fault, not the caller's.
      return new GatewayError('internal_error');
  }
}

export class LedgerBilling implements Billing {
  private readonly metrics: Metrics | null;
  /** Per streaming hold: when it last reported progress (or started), in performance.now() ms. Gone with the hold. */
  private readonly lastProgress = new WeakMap<Hold, number>();

  constructor(private readonly deps: BillingDeps) {
    this.metrics = deps.metrics ?? null;
  }

  async reserve(requestId: string, key: ApiKey, model: CatalogModel, surface: Surface, bound: Bound, tighter: TighterBound | null = null): Promise<Hold> {
    const amount = boundCost(model.price, bound);
    let reply = await this.ask(requestId, key, amount);
    let reserved = bound;
    let held = amount;
    let inputCounted = false;
    if (!reply.ok && reply.code === 'insufficient_funds' && tighter !== null) {
      // The cheap estimate did not fit: count the text (worker pool) and try the tight one, only if it can fit.
      this.metrics?.count('billing_input_counted');
      const tight = await tighter().catch(() => null); // no count: the first refusal stands
      const tightAmount = tight === null ? amount : boundCost(model.price, tight);
      if (tight !== null && tightAmount < amount) {
        if (tightAmount <= reply.available) {
          reply = await this.ask(requestId, key, tightAmount);
          reserved = tight;
          held = tightAmount;
          inputCounted = true;
        } else {
          // Refused without a second round trip (and a second quota slot): say what the tight estimate needs.
          reply = { ...reply, required: tightAmount };
        }
      }
    }
    if (!reply.ok) {
      this.metrics?.count(reply.code === 'rate_limited' ? 'billing_rate_limited' : 'billing_refused');
      if (reply.code !== 'rate_limited' && reply.code !== 'insufficient_funds') {
        this.deps.logger.error({ rid: requestId, org: key.orgId, code: reply.code }, 'billing: reservation refused by the ledger');
      }
      throw refusal(reply);
    }
    this.metrics?.count('billing_reserved');
    // The price travels with the hold: a catalog change mid-call does not change what this call costs.
    return {
      requestId,
      orgId: key.orgId,
      keyId: key.id,
      modelId: model.modelId,
      surface,
      funding: key.funding,
      price: model.price,
      reserved: held,
      bound: reserved,
      inputCounted,
    };
  }

  /** One reservation round trip; no answer is a 503, after voiding whatever may have been held. */
  private async ask(requestId: string, key: ApiKey, amount: number): Promise<ReserveReply> {
    try {
      return await this.deps.ledger.reserve({ requestId, orgId: key.orgId, funding: key.funding, amount });
    } catch (err) {
      // No answer: the hold may exist all the same. Void it rather than leave the money held until max age.
      void this.deps.ledger.release({ requestId, orgId: key.orgId }).catch(() => {});
      this.metrics?.count('billing_ledger_unavailable');
      this.deps.logger.warn({ rid: requestId, err: (err as Error).message }, 'billing: ledger did not answer a reservation');
      throw new GatewayError('service_unavailable');
    }
  }

  /**
   * The charge is the failed-count estimate (pipeline/settle.ts localCount):
   * the input bound reserved, one token per UTF-8 byte delivered, at most the
   * hold — an upper estimate that needs no token count on the stream's path.
   */
  progress(hold: Hold | null, produced: { producedText(): string }, supplier: string | null): void {
    if (hold === null) return;
    const now = performance.now();
    // The first delivered chunk reports at once (a stream cut in its first
    // second has delivered output too), then at most once an interval.
    const last = this.lastProgress.get(hold);
    if (last !== undefined && now - last < PROGRESS_INTERVAL_MS) return;
    this.lastProgress.set(hold, now);
    try {
      const bytes = Buffer.byteLength(produced.producedText(), 'utf8');
      const metered: Metered = { inputTokens: hold.bound.inputTokens, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: Math.min(bytes, hold.bound.outputTokens), imageUnits: hold.bound.imageUnits, source: 'estimate' };
      const charge = settlementCharge(hold.price, metered, hold.reserved);
      if (!Number.isSafeInteger(charge.charged)) return;
      charge.charged = Math.min(charge.charged, hold.reserved);
      charge.overdraft = 0;
      this.deps.ledger.progress({ usage: this.usageRow(hold, charge, metered, 'interrupted', { ttfbMs: null, totalMs: 0 }, supplier) });
      this.metrics?.count('billing_progress_sent');
    } catch (err) {
      this.deps.logger.warn({ rid: hold.requestId, err: (err as Error).message }, 'billing: stream progress not sent');
    }
  }

  async settle(hold: Hold, metered: Metered | null, outcome: Outcome, timings: Timings, supplier: string | null): Promise<void> {
    try {
      const charge = settlementCharge(hold.price, metered, hold.reserved);
      // The local count failed: charged on the upper estimate (docs/billing.md, "When nothing counts").
      if (metered?.source === 'estimate') this.metrics?.count('billing_count_failed');
      if (!Number.isSafeInteger(charge.charged)) {
        // Pricing bounds every count so this cannot happen; if it does, the hold is what the customer agreed to.
        this.deps.logger.error({ rid: hold.requestId, reserved: hold.reserved }, 'billing: cost is not a whole number of micros; charged the hold');
        charge.charged = hold.reserved;
        charge.overdraft = 0;
      } else if (charge.overdraft > 0) {
        // The supplier counted more than the bound reserved (docs/billing.md, "Overdraft"): charged in full, never dropped.
        this.metrics?.count('billing_overdraft_calls');
        this.metrics?.count('billing_overdraft_micros', charge.overdraft);
        this.deps.logger.warn({ rid: hold.requestId, org: hold.orgId, charged: charge.charged, reserved: hold.reserved }, 'billing: cost above the hold; charged in full, overdraft recorded');
      }
      await this.deliver(this.usageRow(hold, charge, metered, outcome, timings, supplier));
    } catch (err) {
      this.deps.logger.error({ rid: hold.requestId, err: (err as Error).message }, 'billing: settlement failed');
    }
  }

  private usageRow(hold: Hold, charge: Charge, metered: Metered | null, outcome: string, timings: Timings, supplier: string | null): UsageRow {
    return {
      requestId: hold.requestId,
      orgId: hold.orgId,
      keyId: hold.keyId,
      modelId: hold.modelId,
      supplier,
      surface: hold.surface,
      funding: hold.funding,
      inputTokens: charge.counts.inputTokens,
      cachedInputTokens: charge.counts.cachedInputTokens,
      outputTokens: charge.counts.outputTokens,
      imageUnits: charge.counts.imageUnits,
      reservedMicros: hold.reserved,
      chargedMicros: charge.charged,
      overdraftMicros: charge.overdraft,
      outcome,
      meteredSource: metered?.source ?? null,
      holdExpired: false,
      ttfbMs: wholeMs(timings.ttfbMs),
      totalMs: wholeMs(timings.totalMs) ?? 0,
      finishedAt: Date.now(),
    };
  }

  private async deliver(usage: UsageRow): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.deps.ledger.settle({ usage });
        this.metrics?.count('billing_settled');
        return;
      } catch (err) {
        if (attempt >= SETTLE_ATTEMPTS) {
          // The hold is released by its lease; the charge is lost. Logged with what an operator needs to redo it.
          this.metrics?.count('billing_settle_lost');
          this.deps.logger.error(
            { rid: usage.requestId, org: usage.orgId, charged: usage.chargedMicros, err: (err as Error).message },
            'billing: settlement not delivered',
          );
          return;
        }
        await new Promise((r) => setTimeout(r, SETTLE_RETRY_MS * attempt));
      }
    }
  }
}
