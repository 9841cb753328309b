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
import { answerBuffer, SPARE_MAX_BYTES } from '../answer-bytes.js';
import { CLOSE_BRACE, CLOSE_BRACKET, COLON, COMMA, isDigit, MINUS, NOT_TAKEN, OPEN_BRACE, OPEN_BRACKET, QUOTE, Scanner } from './json-bytes.js';
import type { DecodedEmbeddings } from './reply.js';

const LITTLE_ENDIAN = endianness() === 'LE';

const FLOATS_START = 4096;
/**
 * Kept between replies of this thread: the floats of every vector of the
 * reply being decoded (grown as needed). One that grew past SPARE_MAX_BYTES
 * (a reply of millions of numbers: 32 MiB of `0,` holds 16 million, 64 MB
 * of floats) is let go once its reply is answered, as answer-bytes.ts lets
 * go of such an answer's buffer: a thread keeps at most that much for the
 * next reply.
 */
let floats = new Float32Array(FLOATS_START);
/** How many of `floats` the reply being decoded has filled. */
let floatsUsed = 0;

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
    if (s.closes(CLOSE_BRACE)) break;
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
  if (!s.empty(CLOSE_BRACKET))
    for (;;) {
      const d = s.peek();
      if (!(d === MINUS || isDigit(d))) throw NOT_TAKEN;
      if (n === floats.length) {
        const grown = new Float32Array(floats.length * 2);
        grown.set(floats);
        floats = grown;
      }
      s.float32Into(floats, n++);
      if (s.closes(CLOSE_BRACKET)) break;
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
  } finally {
    if (floats.byteLength > SPARE_MAX_BYTES) floats = new Float32Array(FLOATS_START);
  }
}

/** The bytes of floats this thread keeps for its next reply (tests: the ceiling holds). */
export function keptFloatBytes(): number {
  return floats.byteLength;
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
    if (s.closes(CLOSE_BRACE)) break;
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
    } else at = base64Into(bytes, v.start * 4, (v.start + v.count) * 4, out, at);
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
  if (s.empty(CLOSE_BRACKET)) return [];
  for (;;) {
    items.push(item(s, items.length));
    if (s.closes(CLOSE_BRACKET)) break;
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
  if (s.empty(CLOSE_BRACE)) return null;
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
    if (s.closes(CLOSE_BRACE)) break;
  }
  return tokens ?? null;
}
