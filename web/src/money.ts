// One money format for every amount the console shows: the account currency
// (billing.currency, written on the page by the server), always two decimals
// in the reader's language ("$12.35", "12,35 $"), the exact amount the API
// wrote (up to six decimals) in the title. Amounts arrive as decimal strings
// and are rounded here in integer micros, never added as floats.
namespace money {
  const DECIMAL = /^(-?)(\d{1,12})(?:\.(\d{1,6}))?$/;
  let formatter: Intl.NumberFormat | null = null;

  export function currency(): string {
    return document.body.dataset.currency || 'USD';
  }

  function number(n: number): string {
    if (formatter === null) {
      try {
        formatter = new Intl.NumberFormat(i18n.locale, { style: 'currency', currency: currency(), minimumFractionDigits: 2, maximumFractionDigits: 2 });
      } catch {
        // A code Intl does not know: the number, then the code.
        formatter = new Intl.NumberFormat(i18n.locale, { minimumFractionDigits: 2, maximumFractionDigits: 2 });
        const plain = formatter;
        formatter = { format: (v: number) => `${plain.format(v)} ${currency()}` } as Intl.NumberFormat;
      }
    }
    return formatter.format(n);
  }

  /** Micros of a decimal string, exactly; null for anything else. */
  export function micros(text: string): bigint | null {
    const m = DECIMAL.exec(text);
    if (m === null) return null;
    const abs = BigInt(m[2]) * 1_000_000n + BigInt((m[3] ?? '').padEnd(6, '0'));
    return m[1] === '-' ? -abs : abs;
  }

  /** "12.345678" → "$12.35"; a non-zero amount under a cent → "<$0.01", not a misleading zero. */
  export function text(decimal: string): string {
    const u = micros(decimal);
    if (u === null) return decimal;
    const abs = u < 0n ? -u : u;
    const cents = (abs + 5_000n) / 10_000n;
    if (abs > 0n && cents === 0n) return `<${number(0.01)}`;
    return number(Number(u < 0n ? -cents : cents) / 100);
  }

  /** The exact amount and its currency, for a title. */
  export function exact(decimal: string): string {
    return `${decimal} ${currency()}`;
  }

  /** The amount as an element: the rounded text, the exact amount on hover and for screen readers' details. */
  export function el(decimal: string | null | undefined): HTMLElement | string {
    if (decimal === null || decimal === undefined) return '—';
    return ui.h('span', { class: 'money', title: exact(decimal) }, text(decimal));
  }

  /** An amount from a number of units (the chart's axis), with `decimals` decimals (2 unless told). */
  export function units(n: number, decimals = 2): string {
    if (decimals === 2) return number(n);
    try {
      return n.toLocaleString(i18n.locale, { style: 'currency', currency: currency(), minimumFractionDigits: decimals, maximumFractionDigits: decimals });
    } catch {
      return `${n.toLocaleString(i18n.locale, { minimumFractionDigits: decimals, maximumFractionDigits: decimals })} ${currency()}`;
    }
  }
}
