// A scanner over a JSON document's bytes, for decoders that take a large
// reply without JSON.parse (embeddings/reply-bytes.ts): whitespace, plain
// strings (their bytes), any value skipped as JSON.parse would validate it,
// and numbers — as JSON.parse reads them, or straight into a Float32Array.
// Whatever it does not take it throws as NOT_TAKEN, and the decoder then
// hands the reply to JSON.parse: it never has to judge a reply differently.

/** 10^0 … 10^22: every one an exact double, so m / 10^k and m · 10^k round once. */
const POW10 = Array.from({ length: 23 }, (_, k) => Number(`1e${k}`));
/** 2^-50: four units in the last place of a double, relative. */
const FOUR_ULPS = 2 ** -50;

export const QUOTE = 0x22;
const BACKSLASH = 0x5c;
export const COMMA = 0x2c;
export const COLON = 0x3a;
export const OPEN_BRACE = 0x7b;
export const CLOSE_BRACE = 0x7d;
export const OPEN_BRACKET = 0x5b;
export const CLOSE_BRACKET = 0x5d;
export const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;

// A parse failure: unwinds to decodeReplyBytes, which answers null. Thrown only on the rare path (a reply to re-decode).
export const NOT_TAKEN = new Error('not taken by the byte decoder');

export function isDigit(c: number): boolean {
  return c >= ZERO && c <= NINE;
}

export class Scanner {
  i = 0;
  /** Where the last plainString() ended: its closing quote. */
  stringEnd = 0;
  constructor(
    readonly b: Uint8Array,
    readonly end: number,
  ) {}

  ws(): void {
    const b = this.b;
    let i = this.i;
    while (i < this.end) {
      const c = b[i]!;
      if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break;
      i++;
    }
    this.i = i;
  }

  /** The next byte after whitespace, not consumed; -1 at the end. */
  peek(): number {
    this.ws();
    return this.i < this.end ? this.b[this.i]! : -1;
  }

  expect(c: number): void {
    if (this.peek() !== c) throw NOT_TAKEN;
    this.i++;
  }

  /** Right after an opener: true when the container is empty (its `close` consumed), false when a member or element follows. */
  empty(close: number): boolean {
    if (this.peek() !== close) return false;
    this.i++;
    return true;
  }

  /** After a member or element: true at `close` (consumed), false after a comma (consumed); anything else is not taken. */
  closes(close: number): boolean {
    const n = this.peek();
    this.i++;
    if (n === close) return true;
    if (n !== COMMA) throw NOT_TAKEN;
    return false;
  }

  /**
   * A string's raw bytes between its quotes, [start, stringEnd): ASCII without escapes or control characters, whose
   * JSON text is those bytes in quotes; any other string is not taken (JSON.parse and JSON.stringify decide those).
   */
  plainString(): number {
    this.expect(QUOTE);
    const b = this.b;
    const start = this.i;
    let i = start;
    while (i < this.end) {
      const c = b[i]!;
      if (c === QUOTE) {
        this.stringEnd = i;
        this.i = i + 1;
        return start;
      }
      if (c === BACKSLASH || c < 0x20 || c >= 0x80) throw NOT_TAKEN;
      i++;
    }
    throw NOT_TAKEN;
  }

  /** Whether the last plain string read ([start, stringEnd)) is `name` (ASCII). */
  named(start: number, name: string): boolean {
    const length = this.stringEnd - start;
    if (length !== name.length) return false;
    for (let k = 0; k < length; k++) if (this.b[start + k] !== name.charCodeAt(k)) return false;
    return true;
  }

  /** Skips any JSON string, escapes included (validated as JSON.parse would). */
  skipString(): void {
    this.expect(QUOTE);
    const b = this.b;
    let i = this.i;
    while (i < this.end) {
      const c = b[i]!;
      if (c === QUOTE) {
        this.i = i + 1;
        return;
      }
      if (c < 0x20) throw NOT_TAKEN;
      if (c === BACKSLASH) {
        const e = b[i + 1];
        if (e === 0x75) {
          for (let k = 2; k < 6; k++) if (!isHex(b[i + k])) throw NOT_TAKEN;
          i += 6;
          continue;
        }
        if (e !== QUOTE && e !== BACKSLASH && e !== 0x2f && e !== 0x62 && e !== 0x66 && e !== 0x6e && e !== 0x72 && e !== 0x74) throw NOT_TAKEN;
        i += 2;
        continue;
      }
      i++;
    }
    throw NOT_TAKEN;
  }

  /** Skips any JSON value. `depth` bounds nesting (a hostile reply cannot exhaust the stack). */
  skipValue(depth: number): void {
    if (depth > 64) throw NOT_TAKEN;
    const c = this.peek();
    if (c === QUOTE) return this.skipString();
    if (c === OPEN_BRACE) {
      this.i++;
      if (this.empty(CLOSE_BRACE)) return;
      for (;;) {
        this.skipString();
        this.expect(COLON);
        this.skipValue(depth + 1);
        if (this.closes(CLOSE_BRACE)) return;
      }
    }
    if (c === OPEN_BRACKET) {
      this.i++;
      if (this.empty(CLOSE_BRACKET)) return;
      for (;;) {
        this.skipValue(depth + 1);
        if (this.closes(CLOSE_BRACKET)) return;
      }
    }
    if (c === MINUS || isDigit(c)) {
      this.scanNumber();
      return;
    }
    if (this.literal('true') || this.literal('false') || this.literal('null')) return;
    throw NOT_TAKEN;
  }

  private literal(word: string): boolean {
    if (this.i + word.length > this.end) return false;
    for (let k = 0; k < word.length; k++) if (this.b[this.i + k] !== word.charCodeAt(k)) return false;
    this.i += word.length;
    return true;
  }

  // The last number scanned (scanNumber): where its text starts, its sign, its first 19 significant digits in small
  // integers (so the loops stay in int32 arithmetic: the first 9 in `head`, the next 6 in `mid`, the next 4 in `low`;
  // further ones are below a double's precision), how many there were, and the power of ten they are scaled by.
  private numberStart = 0;
  private negative = false;
  private head = 0;
  private mid = 0;
  private low = 0;
  private digits = 0;
  private exponent = 0;

  /** A JSON number (strict grammar) into the fields above. */
  private scanNumber(): void {
    this.ws();
    const b = this.b;
    const end = this.end;
    let i = this.i;
    this.numberStart = i;
    const negative = b[i] === MINUS;
    if (negative) i++;
    let head = 0;
    let mid = 0;
    let low = 0;
    let digits = 0;
    let exponent = 0;
    if (b[i] === ZERO) i++;
    else if (i < end && isDigit(b[i]!)) {
      for (; i < end && isDigit(b[i]!); i++) {
        const d = b[i]! - ZERO;
        if (digits < 9) head = head * 10 + d;
        else if (digits < 15) mid = mid * 10 + d;
        else if (digits < 19) low = low * 10 + d;
        else exponent++;
        digits++;
      }
    } else throw NOT_TAKEN;
    if (b[i] === DOT) {
      i++;
      if (!(i < end && isDigit(b[i]!))) throw NOT_TAKEN;
      for (; i < end && isDigit(b[i]!); i++) {
        const d = b[i]! - ZERO;
        if (digits === 0 && d === 0) {
          exponent--; // a leading zero of the fraction: position only
          continue;
        }
        if (digits < 9) head = head * 10 + d;
        else if (digits < 15) mid = mid * 10 + d;
        else if (digits < 19) low = low * 10 + d;
        else continue;
        digits++;
        exponent--;
      }
    }
    if (b[i] === 0x65 || b[i] === 0x45) {
      i++;
      let sign = 1;
      if (b[i] === MINUS || b[i] === PLUS) sign = b[i++] === MINUS ? -1 : 1;
      if (!(i < end && isDigit(b[i]!))) throw NOT_TAKEN;
      let e = 0;
      for (; i < end && isDigit(b[i]!); i++) e = Math.min(e * 10 + (b[i]! - ZERO), 100_000);
      exponent += sign * e;
    }
    this.i = i;
    this.negative = negative;
    this.head = head;
    this.mid = mid;
    this.low = low;
    this.digits = digits;
    this.exponent = exponent;
  }

  /** A JSON number, as the double JSON.parse gives for it (by Number() of its text: only indexes and counts come here). */
  number(): number {
    this.scanNumber();
    return numberText(this.b, this.numberStart, this.i);
  }

  /**
   * A JSON number into target[at], as a Float32Array stores the double
   * JSON.parse gives for it: computed from the digits, exact whenever no
   * float32 rounding boundary lies within four units of that double's last
   * place, and by Number() of the text when one does. (Stored here, not
   * returned: a double returned from a call that is not inlined is a heap
   * number, 393,216 of them per 128 × 3072 reply.)
   */
  float32Into(target: Float32Array, at: number): void {
    this.scanNumber();
    const digits = this.digits;
    const exponent = this.exponent;
    if (digits === 0) {
      target[at] = this.negative ? -0 : 0;
      return;
    }
    if (exponent < -22 || exponent > 22) {
      target[at] = numberText(this.b, this.numberStart, this.i);
      return;
    }
    // The 15 first digits are exact in a double; with the next 4, then the scaling, two roundings: within two units of
    // the double JSON.parse gives.
    const midDigits = digits <= 9 ? 0 : Math.min(digits, 15) - 9;
    let m = midDigits === 0 ? this.head : this.head * POW10[midDigits]! + this.mid;
    if (digits > 15) m = m * POW10[Math.min(digits, 19) - 15]! + this.low;
    m = exponent < 0 ? m / POW10[-exponent]! : m * POW10[exponent]!;
    if (this.negative) m = -m;
    // A float32 rounding boundary within ±4 units could put JSON.parse's double on its other side: Number() decides then.
    const f = Math.fround(m);
    const margin = Math.abs(m) * FOUR_ULPS;
    target[at] = Math.fround(m - margin) === f && Math.fround(m + margin) === f ? f : numberText(this.b, this.numberStart, this.i);
  }
}

/** The double JSON.parse gives for the number text in b[start, end). */
function numberText(b: Uint8Array, start: number, end: number): number {
  return Number(Buffer.from(b.buffer, b.byteOffset + start, end - start).toString('latin1'));
}

function isHex(c: number | undefined): boolean {
  return c !== undefined && ((c >= ZERO && c <= NINE) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46));
}
