// Money is integer micros (one millionth of the account currency) inside the
// service, and a decimal string ("10.00") wherever it crosses the console API.
//
// Micros are JavaScript numbers, exact up to 2^53 − 1. That is the documented
// maximum of any amount, balance or package (MAX_MICROS, about 9 billion
// units): an amount above it is refused by name when it is parsed, a credit
// that would take a balance or package above it is refused by the ledger
// (and by a CHECK in the store, migration 005), and an int8 read from the
// store that is not exact as a number fails the query (store/pool.ts) rather
// than rounding.

export const MICROS_PER_UNIT = 1_000_000;

/** The two pots an organization's money sits in: its balance, and a package (prepaid, possibly expiring). */
export type Funding = 'balance' | 'package';

/** The most any amount, balance or package may hold, in micros: the largest integer a number holds exactly. */
export const MAX_MICROS = Number.MAX_SAFE_INTEGER;
/** MAX_MICROS as the console writes it. */
export const MAX_MONEY = '9007199254.740991';

const MAX_MICROS_BIG = BigInt(MAX_MICROS);
const DECIMAL = /^(\d{1,12})(?:\.(\d{1,6}))?$/;

/** Micros of a well-formed decimal, exactly (BigInt), or null when it is not one. */
function exactMicros(text: unknown): bigint | null {
  if (typeof text !== 'string') return null;
  const m = DECIMAL.exec(text);
  if (m === null) return null;
  return BigInt(m[1]) * BigInt(MICROS_PER_UNIT) + BigInt((m[2] ?? '').padEnd(6, '0'));
}

/**
 * "10.5" → 10_500_000. Null for anything that is not a non-negative decimal
 * with at most 6 places, or that is above MAX_MONEY (see moneyTooLarge).
 */
export function parseMoney(text: unknown): number | null {
  const micros = exactMicros(text);
  return micros === null || micros > MAX_MICROS_BIG ? null : Number(micros);
}

/** A well-formed decimal above MAX_MONEY: what parseMoney refused, told apart from a malformed one. */
export function moneyTooLarge(text: unknown): boolean {
  const micros = exactMicros(text);
  return micros !== null && micros > MAX_MICROS_BIG;
}

/** 10_500_000 → "10.50"; keeps the sub-cent digits when there are any. Exact for any integer or bigint. */
export function formatMoney(micros: number | bigint): string {
  if (typeof micros === 'number' && !Number.isFinite(micros)) throw new RangeError(`money: ${micros} is not an amount`);
  const big = typeof micros === 'bigint' ? micros : BigInt(Math.trunc(micros));
  const sign = big < 0n ? '-' : '';
  const abs = big < 0n ? -big : big;
  const per = BigInt(MICROS_PER_UNIT);
  let fraction = String(abs % per).padStart(6, '0').replace(/0+$/, '');
  if (fraction.length < 2) fraction = fraction.padEnd(2, '0');
  return `${sign}${abs / per}.${fraction}`;
}
