// Money is integer micros (one millionth of the account currency) inside the
// service, and a decimal string ("10.00") wherever it crosses the console API.

export const MICROS_PER_UNIT = 1_000_000;

const DECIMAL = /^(\d{1,12})(?:\.(\d{1,6}))?$/;

/** "10.5" → 10_500_000. Null for anything that is not a non-negative decimal with at most 6 places. */
export function parseMoney(text: unknown): number | null {
  if (typeof text !== 'string') return null;
  const m = DECIMAL.exec(text);
  if (m === null) return null;
  const fraction = (m[2] ?? '').padEnd(6, '0');
  return Number(m[1]) * MICROS_PER_UNIT + Number(fraction);
}

/** 10_500_000 → "10.50"; keeps the sub-cent digits when there are any. */
export function formatMoney(micros: number): string {
  const sign = micros < 0 ? '-' : '';
  const abs = Math.abs(micros);
  const units = Math.floor(abs / MICROS_PER_UNIT);
  let fraction = String(abs % MICROS_PER_UNIT).padStart(6, '0').replace(/0+$/, '');
  if (fraction.length < 2) fraction = fraction.padEnd(2, '0');
  return `${sign}${units}.${fraction}`;
}

/** Cost of `tokens` at `perMtok` micros per million tokens, rounded up to a whole micro. */
export function tokenCost(tokens: number, perMtok: number): number {
  return Math.ceil((tokens * perMtok) / 1_000_000);
}
