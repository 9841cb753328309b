// The Billing the pipeline calls, over any ledger host. Prices are applied
// here, in the worker (pure integer maths, spread over every worker); the
// actor only ever sees amounts in micros.
import type { ApiKey } from '../auth/types.js';
import type { CatalogModel, Price } from '../catalog/types.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { LedgerClient, ReserveReply, UsageRow } from '../ledger/protocol.js';
import type { Logger } from '../log/logger.js';
import type { Metrics, SeriesCell } from '../metrics/registry.js';
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
  /** The account currency's code (billing.currency), named in a refusal's message. */
  currency?: string;
}

function wholeMs(ms: number | null): number | null {
  if (ms === null || !Number.isFinite(ms)) return null;
  return Math.min(MAX_MS, Math.max(0, Math.round(ms)));
}

/** The largest output bound (≤ the call's) whose reservation `available` pays, by bisection over the exact cost. */
function outputThatFits(price: Price, bound: Bound, available: number): number {
  let lo = 0;
  let hi = bound.outputTokens;
  if (boundCost(price, { ...bound, outputTokens: 0 }) > available) return 0;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (boundCost(price, { ...bound, outputTokens: mid }) <= available) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/**
 * What a 402 says (issue 34 item 4): what the call needed against what the
 * organization has, and whether a lower output bound would fit. Only the
 * caller's own organization's figures, which its key may see.
 */
function fundsMessage(required: number, available: number, funding: string, currency: string, price: Price, bound: Bound): string {
  const money = (micros: number) => `${formatMoney(micros)}${currency === '' ? '' : ` ${currency}`}`;
  const needs =
    bound.outputTokens > 0
      ? `This call needs ${money(required)} reserved (its input and an output bound of ${bound.outputTokens} tokens)`
      : `This call needs ${money(required)} reserved`;
  const has = `the organization has ${money(available)} available from its ${funding === 'package' ? 'package' : 'balance'}`;
  const fits = bound.outputTokens > 0 ? outputThatFits(price, bound, available) : 0;
  const hint =
    fits > 0
      ? `A lower output bound (max_tokens, max_completion_tokens or max_output_tokens) of at most ${fits} tokens would fit; or add funds.`
      : 'Add funds, or send a smaller request.';
  return `${needs}, and ${has}. ${hint}`;
}

/** A refusal from the actor, as the error the surfaces render (REST envelopes carry `limit`). */
export function refusal(reply: Exclude<ReserveReply, { ok: true }>, explain: { price: Price; bound: Bound; currency: string } | null = null): GatewayError {
  switch (reply.code) {
    case 'rate_limited':
      if (reply.scope === 'key') {
        const s = reply.retryAfterSeconds === 1 ? '' : 's';
        return new GatewayError('rate_limited', {
          retryAfterSeconds: reply.retryAfterSeconds,
          message: `This API key's own quota of ${reply.limit} requests per minute is used up (a limit set on the key, not the organization's quota); retry after ${reply.retryAfterSeconds} second${s}.`,
          limit: { kind: 'key_request_quota', window: reply.window, limit: reply.limit, retry_after_seconds: reply.retryAfterSeconds },
        });
      }
      return new GatewayError('rate_limited', {
        retryAfterSeconds: reply.retryAfterSeconds,
        limit: { kind: 'request_quota', window: reply.window, limit: reply.limit, retry_after_seconds: reply.retryAfterSeconds },
      });
    case 'insufficient_funds':
      return new GatewayError('insufficient_funds', {
        ...(explain === null ? {} : { message: fundsMessage(reply.required, reply.available, reply.funding, explain.currency, explain.price, explain.bound) }),
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

  /** billing_reserved_micros per surface: its series name is built once per surface, not per call. */
  private readonly reservedCells = new Map<Surface, SeriesCell>();

  constructor(private readonly deps: BillingDeps) {
    this.metrics = deps.metrics ?? null;
  }

  private reservedCell(surface: Surface): SeriesCell {
    let cell = this.reservedCells.get(surface);
    if (cell === undefined) this.reservedCells.set(surface, (cell = this.metrics!.seriesCell(`billing_reserved_micros{surface="${surface}"}`)));
    return cell;
  }

  reserve(requestId: string, key: ApiKey, model: CatalogModel, surface: Surface, bound: Bound, tighter: TighterBound | null = null): Hold | Promise<Hold> {
    const amount = boundCost(model.price, bound);
    // The common call: an allotment of this process has room for it, so nothing is asked and nothing awaited.
    // A key with a quota of its own is counted by the actor (ask); so is everything reserveHere does not take.
    if (key.quotaPerMinute === null && this.deps.ledger.reserveHere({ requestId, orgId: key.orgId, funding: key.funding, amount })) {
      return this.held(requestId, key, model, surface, bound, amount, false);
    }
    return this.reserveAsked(requestId, key, model, surface, bound, amount, tighter);
  }

  /** A reservation the ledger's actor answers (ask), with the tighter bound's second try when the first does not fit. */
  private async reserveAsked(requestId: string, key: ApiKey, model: CatalogModel, surface: Surface, bound: Bound, amount: number, tighter: TighterBound | null): Promise<Hold> {
    let reply = await this.ask(requestId, key, amount);
    let reserved = bound;
    let held = amount;
    let inputCounted = false;
    // The cheap estimate did not fit: count the text (worker pool) and try the tight one, only if it can fit —
    // and only if some count could: when the funds cannot pay even the floor (the output bound alone, or
    // anything at all), the refusal stands at once, with no wait for the pool (issue 38 item 2).
    if (!reply.ok && reply.code === 'insufficient_funds' && tighter !== null && boundCost(model.price, tighter.floor()) <= reply.available) {
      this.metrics?.count('billing_input_counted');
      const tight = await tighter.count().catch(() => null); // no count: the first refusal stands
      const tightAmount = tight === null ? amount : boundCost(model.price, tight);
      if (tight !== null && tightAmount < amount) {
        if (tightAmount <= reply.available) {
          // The key's own quota counted this call at the first ask (refused for funds, it still counts): not again.
          reply = await this.ask(requestId, key, tightAmount, false);
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
      if (reply.code === 'insufficient_funds' && this.metrics !== null) {
        this.metrics.countSeries(`billing_funds_refusals{surface="${surface}"}`, 1);
        this.metrics.countSeries(`billing_refused_micros{surface="${surface}"}`, reply.required);
      }
      if (reply.code !== 'rate_limited' && reply.code !== 'insufficient_funds') {
        this.deps.logger.error({ rid: requestId, org: key.orgId, code: reply.code }, 'billing: reservation refused by the ledger');
      }
      throw refusal(reply, { price: model.price, bound: reserved, currency: this.deps.currency ?? '' });
    }
    return this.held(requestId, key, model, surface, reserved, held, inputCounted);
  }

  /** The hold of a reservation the ledger took: `bound` reserved, costing `held`. */
  private held(requestId: string, key: ApiKey, model: CatalogModel, surface: Surface, bound: Bound, held: number, inputCounted: boolean): Hold {
    if (this.metrics !== null) {
      this.metrics.count('billing_reserved');
      this.reservedCell(surface).value += held;
    }
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
      bound,
      inputCounted,
    };
  }

  /** One reservation round trip; no answer is a 503, after voiding whatever may have been held. `keyQuota` false: the key's own quota already counted this call. */
  private async ask(requestId: string, key: ApiKey, amount: number, keyQuota = true): Promise<ReserveReply> {
    try {
      const perMinute = keyQuota ? key.quotaPerMinute : null;
      return await this.deps.ledger.reserve(
        perMinute === null
          ? { requestId, orgId: key.orgId, funding: key.funding, amount }
          : { requestId, orgId: key.orgId, funding: key.funding, amount, keyQuota: { keyId: key.id, perMinute } },
      );
    } catch (err) {
      // No answer: the hold may exist all the same. Void it rather than leave the money held until max age.
      void this.deps.ledger.release({ requestId, orgId: key.orgId }).catch(() => {});
      this.metrics?.count('billing_ledger_unavailable');
      this.deps.logger.warn({ rid: requestId, err: (err as Error).message }, 'billing: ledger did not answer a reservation');
      throw new GatewayError('service_unavailable');
    }
  }

  async release(hold: Hold): Promise<void> {
    try {
      await this.deps.ledger.release({ requestId: hold.requestId, orgId: hold.orgId });
    } catch (err) {
      // The hold's lease voids it in time; the call is refused either way.
      this.deps.logger.warn({ rid: hold.requestId, err: (err as Error).message }, 'billing: hold not released; its lease will void it');
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

  async settle(hold: Hold, metered: Metered | null, outcome: Outcome, timings: Timings, supplier: string | null): Promise<UsageRow | null> {
    try {
      const charge = settlementCharge(hold.price, metered, hold.reserved);
      // The local count failed: charged on the upper estimate (docs/billing.md, "When nothing counts"). A
      // cancelled call is always settled as an estimate (pipeline/settle.ts, meterCancelled): not counted here.
      if (metered?.source === 'estimate' && outcome !== 'cancelled') this.metrics?.count('billing_count_failed');
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
      const usage = this.usageRow(hold, charge, metered, outcome, timings, supplier);
      return (await this.deliver(usage)) ? usage : null;
    } catch (err) {
      this.deps.logger.error({ rid: hold.requestId, err: (err as Error).message }, 'billing: settlement failed');
      return null;
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

  /** True once the ledger took the row; false when it was lost after every attempt. */
  private async deliver(usage: UsageRow): Promise<boolean> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.deps.ledger.settle({ usage });
        this.metrics?.count('billing_settled');
        return true;
      } catch (err) {
        if (attempt >= SETTLE_ATTEMPTS) {
          // The hold is released by its lease; the charge is lost. Logged with what an operator needs to redo it.
          this.metrics?.count('billing_settle_lost');
          this.deps.logger.error(
            { rid: usage.requestId, org: usage.orgId, charged: usage.chargedMicros, err: (err as Error).message },
            'billing: settlement not delivered',
          );
          return false;
        }
        await new Promise((r) => setTimeout(r, SETTLE_RETRY_MS * attempt));
      }
    }
  }
}
