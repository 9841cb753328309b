// Money as the console API writes it ("12.50", "-0.000125"), read back as
// integer micros for assertions. parseMoney (src/money/money.ts) is the
// *input* parser: it refuses negatives with null, and `null >= 0` is true in
// JavaScript, so an assertion built on it cannot see a negative balance.
// This one reads the sign and throws on anything that is not money.
const SIGNED_DECIMAL = /^(-?)(\d{1,15})(?:\.(\d{1,6}))?$/;

export function micros(text: unknown): number {
  const m = typeof text === 'string' ? SIGNED_DECIMAL.exec(text) : null;
  if (m === null) throw new Error(`not an amount of money: ${JSON.stringify(text)}`);
  const value = Number(m[2]) * 1_000_000 + Number((m[3] ?? '').padEnd(6, '0'));
  if (!Number.isSafeInteger(value)) throw new Error(`amount beyond exact integers: ${text}`);
  return m[1] === '-' ? -value : value;
}
