// An embeddings reply decoded from its bytes, without JSON.parse: the fast
// path of the pool thread that reads a large reply (workers/decode-reply.ts).
//
// Why (issue 33): JSON.parse of a 128 × 3072 float reply builds an 8.4 MB
// string, 128 arrays of doubles and the objects around them, and the answer
// was joined into one more string before its bytes: ~17 MB of garbage per
// request in the thread's isolate, much of it large objects that only a full
// collection frees. V8 runs that collection's marking and the scavenges'
// parallel parts on its platform threads, at the HTTP worker's priority, not
// at the pool thread's lower one (pools.piscina_nice): on a machine with few
// cores they took the CPU the event loop needed, and small calls beside
// embeddings waited (docs/performance.md). Here the floats go from the bytes
// straight into a Float32Array this thread keeps, and their base64 straight
// into the answer buffer: a reply leaves no garbage but a few small objects.
//
// Same answer or none: this returns null for anything it does not take on
// its fast path (escapes in keys or in a vector's string, a member twice, a
// malformed reply, …), and the caller then decodes the reply as before
// (JSON.parse, decodeReply), which gives the answer or the error. So every
// reply is judged by one rule: test/surfaces/embeddings/reply-bytes.test.ts
// compares the two on random and hostile replies.
import { endianness } from 'node:os';
import { answerBuffer } from '../answer-bytes.js';
import type { DecodedEmbeddings } from './reply.js';

const LITTLE_ENDIAN = endianness() === 'LE';

/** 10^0 … 10^22: every one an exact double, so m / 10^k and m · 10^k round once. */
const POW10 = Array.from({ length: 23 }, (_, k) => Number(`1e${k}`));
/** 2^-50: four units in the last place of a double, relative. */
const FOUR_ULPS = 2 ** -50;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;

// A parse failure: unwinds to decodeReplyBytes, which answers null. Thrown only on the rare path (a reply to re-decode).
const NOT_TAKEN = new Error('not taken by the byte decoder');

/** Kept between replies of this thread: the floats of every vector of the reply being decoded (grown as needed). */
let floats = new Float32Array(4096);
/** How many of `floats` the reply being decoded has filled. */
let floatsUsed = 0;

function isDigit(c: number): boolean {
  return c >= ZERO && c <= NINE;
}

class Scanner {
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
      if (this.peek() === CLOSE_BRACE) {
        this.i++;
        return;
      }
      for (;;) {
        this.skipString();
        this.expect(COLON);
        this.skipValue(depth + 1);
        const n = this.peek();
        this.i++;
        if (n === CLOSE_BRACE) return;
        if (n !== COMMA) throw NOT_TAKEN;
      }
    }
    if (c === OPEN_BRACKET) {
      this.i++;
      if (this.peek() === CLOSE_BRACKET) {
        this.i++;
        return;
      }
      for (;;) {
        this.skipValue(depth + 1);
        const n = this.peek();
        this.i++;
        if (n === CLOSE_BRACKET) return;
        if (n !== COMMA) throw NOT_TAKEN;
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

/** One `data` item → its index (its position when it gives none, as decodeReply does) and its vector. */
function item(s: Scanner, position: number): { index: number; vector: Vector } {
  s.expect(OPEN_BRACE);
  let index: number | null = null;
  let embedding: Vector | null = null;
  if (s.peek() === CLOSE_BRACE) throw NOT_TAKEN; // no embedding: decodeReply refuses it
  for (;;) {
    const key = s.plainString();
    s.expect(COLON);
    if (s.named(key, 'index')) {
      if (index !== null) throw NOT_TAKEN;
      const c = s.peek();
      if (!(c === MINUS || isDigit(c))) throw NOT_TAKEN;
      index = s.number();
    } else if (s.named(key, 'embedding')) {
      if (embedding !== null) throw NOT_TAKEN;
      embedding = vector(s);
    } else s.skipValue(1);
    const n = s.peek();
    s.i++;
    if (n === CLOSE_BRACE) break;
    if (n !== COMMA) throw NOT_TAKEN;
  }
  if (embedding === null) throw NOT_TAKEN;
  return { index: index ?? position, vector: embedding };
}

/**
 * An item's vector: a string that passes through (`text`: its bytes at [start, start + count) of the reply), or
 * floats at [start, start + count) of this thread's `floats`.
 */
interface Vector {
  text: boolean;
  start: number;
  count: number;
}

/** The `embedding` member: a plain string passes through (as its bytes); an array of numbers goes into `floats`, as float32. */
function vector(s: Scanner): Vector {
  const c = s.peek();
  if (c === QUOTE) {
    const start = s.plainString();
    return { text: true, start, count: s.stringEnd - start };
  }
  if (c !== OPEN_BRACKET) throw NOT_TAKEN;
  s.i++;
  const start = floatsUsed;
  let n = start;
  if (s.peek() === CLOSE_BRACKET) s.i++;
  else
    for (;;) {
      const d = s.peek();
      if (!(d === MINUS || isDigit(d))) throw NOT_TAKEN;
      if (n === floats.length) {
        const grown = new Float32Array(floats.length * 2);
        grown.set(floats);
        floats = grown;
      }
      s.float32Into(floats, n++);
      const e = s.peek();
      s.i++;
      if (e === CLOSE_BRACKET) break;
      if (e !== COMMA) throw NOT_TAKEN;
    }
  floatsUsed = n;
  return { text: false, start, count: n - start };
}

/** Characters of base64 for `bytes` bytes (padded). */
function base64Length(bytes: number): number {
  return Math.ceil(bytes / 3) * 4;
}

const BASE64 = Uint8Array.from(Buffer.from('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/', 'latin1'));
const PAD = 0x3d;

/** Writes src[from, to) as padded base64 into out at `at` (what Buffer's toString('base64') gives, with no string); answers the end. */
function base64Into(src: Uint8Array, from: number, to: number, out: Uint8Array, at: number): number {
  let i = from;
  const whole = from + Math.floor((to - from) / 3) * 3;
  for (; i < whole; i += 3) {
    const n = (src[i]! << 16) | (src[i + 1]! << 8) | src[i + 2]!;
    out[at] = BASE64[n >>> 18]!;
    out[at + 1] = BASE64[(n >>> 12) & 63]!;
    out[at + 2] = BASE64[(n >>> 6) & 63]!;
    out[at + 3] = BASE64[n & 63]!;
    at += 4;
  }
  const rest = to - i;
  if (rest === 0) return at;
  const n = (src[i]! << 16) | (rest === 2 ? src[i + 1]! << 8 : 0);
  out[at] = BASE64[n >>> 18]!;
  out[at + 1] = BASE64[(n >>> 12) & 63]!;
  out[at + 2] = rest === 2 ? BASE64[(n >>> 6) & 63]! : PAD;
  out[at + 3] = PAD;
  return at + 4;
}

/**
 * The reply in `bytes` as decodeReply would decode it, or null: not taken
 * here (the caller decodes it the JSON.parse way, which answers or refuses).
 */
export function decodeReplyBytes(bytes: Uint8Array): DecodedEmbeddings | null {
  const s = new Scanner(bytes, bytes.byteLength);
  floatsUsed = 0;
  try {
    return scan(s);
  } catch (err) {
    if (err === NOT_TAKEN) return null;
    throw err;
  }
}

function scan(s: Scanner): DecodedEmbeddings | null {
  let vectors: Vector[] | null = null;
  let promptTokens: number | null | undefined;
  s.expect(OPEN_BRACE);
  if (s.peek() === CLOSE_BRACE) return null;
  for (;;) {
    const key = s.plainString();
    s.expect(COLON);
    if (s.named(key, 'data')) {
      if (vectors !== null) return null;
      vectors = data(s);
    } else if (s.named(key, 'usage')) {
      if (promptTokens !== undefined) return null;
      promptTokens = usage(s);
    } else s.skipValue(1);
    const n = s.peek();
    s.i++;
    if (n === CLOSE_BRACE) break;
    if (n !== COMMA) return null;
  }
  if (s.peek() !== -1 || vectors === null || vectors.length === 0) return null;
  // The answer's `data` array (decodeReply's text), written into an answer buffer piece by piece: no string is built.
  let length = 1 + vectors.length; // the brackets and the commas between items
  for (let k = 0; k < vectors.length; k++) {
    const v = vectors[k]!;
    length += ITEM_HEAD.length + String(k).length + ITEM_MID.length + (v.text ? v.count : base64Length(v.count * 4)) + ITEM_TAIL.length;
  }
  const out = answerBuffer(length);
  let bytes = new Uint8Array(floats.buffer, 0, floatsUsed * 4);
  if (!LITTLE_ENDIAN) bytes = Buffer.from(bytes).swap32();
  let at = 0;
  out[at++] = OPEN_BRACKET;
  for (let k = 0; k < vectors.length; k++) {
    const v = vectors[k]!;
    if (k > 0) out[at++] = COMMA;
    at += out.write(ITEM_HEAD, at, 'latin1');
    at += out.write(String(k), at, 'latin1');
    at += out.write(ITEM_MID, at, 'latin1');
    if (v.text) {
      out.set(s.b.subarray(v.start, v.start + v.count), at);
      at += v.count;
    }
    else at = base64Into(bytes, v.start * 4, (v.start + v.count) * 4, out, at);
    at += out.write(ITEM_TAIL, at, 'latin1');
  }
  out[at] = CLOSE_BRACKET;
  return { data: out, promptTokens: promptTokens ?? null };
}

const ITEM_HEAD = '{"object":"embedding","index":';
const ITEM_MID = ',"embedding":"';
const ITEM_TAIL = '"}';

/** The `data` array: its vectors in input order; not taken unless the indexes are 0…n−1, each once. */
function data(s: Scanner): Vector[] {
  s.expect(OPEN_BRACKET);
  const items: { index: number; vector: Vector }[] = [];
  if (s.peek() === CLOSE_BRACKET) {
    s.i++;
    return [];
  }
  for (;;) {
    items.push(item(s, items.length));
    const n = s.peek();
    s.i++;
    if (n === CLOSE_BRACKET) break;
    if (n !== COMMA) throw NOT_TAKEN;
  }
  const ordered = new Array<Vector>(items.length);
  for (const { index, vector } of items) {
    if (!Number.isInteger(index) || index < 0 || index >= items.length || ordered[index] !== undefined) throw NOT_TAKEN;
    ordered[index] = vector;
  }
  return ordered;
}

/** usage.prompt_tokens when it is a whole number ≥ 0 (decodeReply's rule), else null; a usage that is not an object: null. */
function usage(s: Scanner): number | null {
  if (s.peek() !== OPEN_BRACE) {
    s.skipValue(1);
    return null;
  }
  s.i++;
  let tokens: number | null | undefined;
  if (s.peek() === CLOSE_BRACE) {
    s.i++;
    return null;
  }
  for (;;) {
    const key = s.plainString();
    s.expect(COLON);
    if (s.named(key, 'prompt_tokens')) {
      if (tokens !== undefined) throw NOT_TAKEN;
      const c = s.peek();
      if (c === MINUS || isDigit(c)) {
        const v = s.number();
        tokens = Number.isSafeInteger(v) && v >= 0 ? v : null;
      } else {
        s.skipValue(1);
        tokens = null;
      }
    } else s.skipValue(1);
    const n = s.peek();
    s.i++;
    if (n === CLOSE_BRACE) break;
    if (n !== COMMA) throw NOT_TAKEN;
  }
  return tokens ?? null;
}
