// Pricing as pure integer maths. Prices are integer micros per million tokens
// (and per image unit); a call's cost is the exact sum of its parts, rounded
// up to a whole micro once per call, so a customer is never charged a
// fraction more than one micro above the exact price.
import type { Price } from '../catalog/types.js';
import type { Bound, Metered } from './types.js';

const PER_MTOK = 1_000_000;
/**
 * Token counts above this are treated as this. It keeps every intermediate
 * product below 2^53 (1e9 tokens × a per-token remainder below 1e6, three
 * parts) so the maths stays exact in doubles without BigInt on the hot path.
 */
export const MAX_COUNTED = 1_000_000_000;

/** A non-negative whole count, whatever a supplier or estimate handed us. */
export function count(n: number): number {
  if (!Number.isFinite(n) || n <= 0) return 0;
  return Math.min(Math.floor(n), MAX_COUNTED);
}

/**
 * Exact ceil(Σ tokens_i × perMtok_i / 1e6). Each price is split into whole
 * micros per token and a remainder below 1e6, so the products stay exact.
 */
export function tokensCost(t1: number, p1: number, t2: number, p2: number, t3: number, p3: number): number {
  const whole = t1 * Math.floor(p1 / PER_MTOK) + t2 * Math.floor(p2 / PER_MTOK) + t3 * Math.floor(p3 / PER_MTOK);
  const rest = t1 * (p1 % PER_MTOK) + t2 * (p2 % PER_MTOK) + t3 * (p3 % PER_MTOK);
  return whole + Math.ceil(rest / PER_MTOK);
}

/**
 * What the pricing counts (and the usage row records), for every surface
 * alike: each surface's meter decides what its calls consumed, never this
 * module. inputTokens includes the cached ones and the cache writes, as chat
 * and responses count them; cachedInputTokens is the part billed at the
 * cached price. Cache writes (Metered.cacheWriteTokens) stay in the uncached
 * part, billed at the input price: the catalog has no cache-write price, and
 * a write is never cheaper than an uncached read. The usage row has no
 * cache-write column, so they are not recorded apart.
 */
export interface Counts {
  inputTokens: number;
  cachedInputTokens: number;
  outputTokens: number;
  imageUnits: number;
}

/** Every count whole and bounded; the cached part held within the input (a supplier claiming more cached than input is held to its input count). */
function countsOf(input: number, cached: number, output: number, images: number): Counts {
  const inputTokens = count(input);
  return { inputTokens, cachedInputTokens: Math.min(count(cached), inputTokens), outputTokens: count(output), imageUnits: count(images) };
}

/**
 * Money must stay exact: a result that is not a safe integer (a price so
 * large that a product passed 2^53, or a count that was never bounded) is an
 * error, never a rounded or infinite amount. Thrown, so a reservation fails
 * (nothing held, nothing called) instead of holding a wrong amount.
 */
function exactMicros(micros: number): number {
  if (!Number.isSafeInteger(micros) || micros < 0) throw new RangeError(`pricing: ${micros} is not an exact amount of micros`);
  return micros;
}

/** The one formula: uncached input (cache writes included) + cached input + output, per million tokens, + image units. */
export function costOf(price: Price, c: Counts): number {
  const uncached = Math.max(0, c.inputTokens - c.cachedInputTokens);
  return exactMicros(
    tokensCost(uncached, price.inputPerMtok, c.cachedInputTokens, price.cachedInputPerMtok, c.outputTokens, price.outputPerMtok) +
      c.imageUnits * price.imageUnit,
  );
}

/** A bound's counts are never clamped (that would hold less than the call may cost): out of range is an error. */
function boundCount(n: number, what: string): number {
  if (!Number.isSafeInteger(n) || n < 0 || n > MAX_COUNTED) throw new RangeError(`pricing: bound ${what} ${n} is not a count in [0, ${MAX_COUNTED}]`);
  return n;
}

/**
 * Micros to hold before the supplier is called. The input estimate is priced
 * as uncached input: the bound must cover the worst case, and cached input is
 * never dearer than uncached. Callers bound the counts first (billing/bound.ts
 * refuses a request whose bound exceeds MAX_COUNTED, by name).
 */
export function boundCost(price: Price, bound: Bound): number {
  const input = boundCount(bound.inputTokens, 'input');
  const output = boundCount(bound.outputTokens, 'output');
  const images = boundCount(bound.imageUnits, 'image units');
  return costOf(price, { inputTokens: input, cachedInputTokens: 0, outputTokens: output, imageUnits: images });
}

export interface Charge {
  counts: Counts;
  /** The exact price of what was consumed. */
  cost: number;
  /** What is taken: the whole cost, even above the hold (issue 12 item 7: never silently dropped). */
  charged: number;
  /** The part of the charge above what was reserved: recorded on the usage row and counted. */
  overdraft: number;
}

/** The settlement of a call: null metered (nothing consumed) charges nothing. */
export function settlementCharge(price: Price, metered: Metered | null, reserved: number): Charge {
  if (metered === null) return { counts: countsOf(0, 0, 0, 0), cost: 0, charged: 0, overdraft: 0 };
  const counts = countsOf(metered.inputTokens, metered.cachedInputTokens, metered.outputTokens, metered.imageUnits);
  const cost = costOf(price, counts);
  return { counts, cost, charged: cost, overdraft: Math.max(0, cost - reserved) };
}
