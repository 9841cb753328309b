// OpenAI embeddings: POST /{instance}/v1/embeddings.
//
// One unit-length vector per input, seeded from a hash of the input, so the
// same input always gives the same bytes. Encoded vectors are memoized:
// building a 1536-float JSON array costs far more than the rest of a request.
import { endianness } from 'node:os';
import { BoundedCache } from './cache.js';
import type { Json } from './common.js';
import { parseDirectives } from './directives.js';
import type { Exchange } from './exchange.js';
import { countTokens } from './tokens.js';

const DEFAULT_DIMENSIONS = 1536;
const MAX_DIMENSIONS = 8192;
const MAX_INPUTS = 2048;
const LITTLE_ENDIAN = endianness() === 'LE';

const encoded = new BoundedCache<string>(512, 4 << 20);
/**
 * Whole answers as bytes, by request: a bench repeating one batch (128 ×
 * 3072 floats: 8.4 MB of JSON) would otherwise have the simulator join and
 * encode its reply on its one event loop each time — ~10 ms during which every
 * other call it serves waits, the floor under any "small calls beside
 * embeddings" figure (docs/performance.md). Only large answers, and two of
 * them at most: at most 32 MB kept (the demo gateway runs this in process).
 */
const replies = new BoundedCache<Buffer>(2, 1 << 20);
const KEPT_MIN_BYTES = 1 << 20;
const KEPT_MAX_BYTES = 16 << 20;

/** FNV-1a over UTF-16 code units: a stable 32-bit seed for a text. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** Deterministic unit vector for `text`: mulberry32 noise, then normalised. */
export function vectorOf(text: string, dimensions: number): Float32Array {
  let s = hash(text) ^ Math.imul(dimensions, 0x9e3779b1);
  const raw = new Float64Array(dimensions);
  let sum = 0;
  for (let i = 0; i < dimensions; i++) {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    const v = ((t ^ (t >>> 14)) >>> 0) / 2147483648 - 1;
    raw[i] = v;
    sum += v * v;
  }
  const norm = Math.sqrt(sum) || 1;
  const out = new Float32Array(dimensions);
  for (let i = 0; i < dimensions; i++) out[i] = (raw[i] as number) / norm;
  return out;
}

/** The `embedding` member's JSON: a base64 string of LE float32, or a number array. */
function embeddingJson(key: string, dimensions: number, base64: boolean): string {
  const memo = `${dimensions}${base64 ? 'b' : 'f'}${key}`;
  let json = encoded.get(memo);
  if (json !== undefined) return json;
  const v = vectorOf(key, dimensions);
  if (!base64) json = JSON.stringify(Array.from(v));
  else if (LITTLE_ENDIAN) json = `"${Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64')}"`;
  else {
    const b = Buffer.allocUnsafe(v.length * 4);
    for (let i = 0; i < v.length; i++) b.writeFloatLE(v[i] as number, i * 4);
    json = `"${b.toString('base64')}"`;
  }
  encoded.set(memo, json);
  return json;
}

/**
 * The embeddings-only directives, in the first input: `[sim:floats]` answers
 * float arrays whatever encoding_format asked for (a supplier that ignores
 * it), `[sim:dims=N]` sets the dimensions when the request states none. Each
 * may be scoped to one instance with `@name`, as every directive may.
 */
function embeddingDirectives(text: string, instance: string): { floats: boolean; dims: number } {
  let floats = false;
  let dims = -1;
  for (let at = text.indexOf('[sim:'); at !== -1; at = text.indexOf('[sim:', at + 1)) {
    const end = text.indexOf(']', at);
    if (end === -1) break;
    let body = text.slice(at + 5, end);
    const scope = body.lastIndexOf('@');
    if (scope !== -1) {
      if (body.slice(scope + 1) !== instance) continue;
      body = body.slice(0, scope);
    }
    if (body === 'floats') floats = true;
    else if (body.startsWith('dims=') && /^[1-9][0-9]{0,3}$/.test(body.slice(5))) dims = Number(body.slice(5));
  }
  return { floats, dims };
}

function isTokens(v: unknown): v is number[] {
  return Array.isArray(v) && v.length > 0 && v.every((x) => Number.isInteger(x));
}

/** Inputs as strings (token arrays keyed by their numbers) and their token count. */
function readInputs(input: unknown): { keys: string[]; tokens: number } | null {
  if (typeof input === 'string') return { keys: [input], tokens: countTokens(input) };
  if (!Array.isArray(input) || input.length === 0 || input.length > MAX_INPUTS) return null;
  if (isTokens(input)) return { keys: [`#${input.join(',')}`], tokens: input.length };
  const keys: string[] = new Array<string>(input.length);
  let tokens = 0;
  for (let i = 0; i < input.length; i++) {
    const x: unknown = input[i];
    if (typeof x === 'string') {
      keys[i] = x;
      tokens += countTokens(x);
    } else if (isTokens(x)) {
      keys[i] = `#${x.join(',')}`;
      tokens += x.length;
    } else return null;
  }
  return { keys, tokens };
}

export function handleEmbeddings(ex: Exchange, req: Json): void {
  const model = req.model;
  if (typeof model !== 'string') return ex.fail(400, 'you must provide a model parameter');
  const inputs = readInputs(req.input);
  if (inputs === null) {
    return ex.fail(400, `'input' must be a non-empty string, array of up to ${MAX_INPUTS} strings, or token arrays`);
  }
  const first = typeof req.input === 'string' ? req.input : Array.isArray(req.input) && typeof req.input[0] === 'string' ? req.input[0] : '';
  const own = embeddingDirectives(first, ex.instance);
  const dims = req.dimensions ?? (own.dims === -1 ? DEFAULT_DIMENSIONS : own.dims);
  if (typeof dims !== 'number' || !Number.isInteger(dims) || dims < 1 || dims > MAX_DIMENSIONS) {
    return ex.fail(400, `'dimensions' must be an integer from 1 to ${MAX_DIMENSIONS}`);
  }
  const format = req.encoding_format;
  if (format !== undefined && format !== 'float' && format !== 'base64') {
    return ex.fail(400, "'encoding_format' must be 'float' or 'base64'");
  }
  const d = parseDirectives(first, ex.instance);
  if (d.status !== 0) return ex.simulateError(d);
  const base64 = format === 'base64' && !own.floats;
  // Only a plain answer is kept: the directives that cut, flood or fail a reply build it each time.
  const plain = d.status === 0 && d.flood === 0 && d.failAfter < 0;
  const memo = plain ? `${dims} ${base64 ? 'b' : 'f'} ${d.noUsage ? 'u' : ''} ${inputs.tokens} ${JSON.stringify(model)} ${inputs.keys.join('\u0000')}` : '';
  const kept = plain ? replies.get(memo) : undefined;
  if (kept !== undefined) return ex.answer(kept, d);
  let data = '';
  for (let i = 0; i < inputs.keys.length; i++) {
    data += `${i === 0 ? '' : ','}{"object":"embedding","index":${i},"embedding":${embeddingJson(inputs.keys[i] as string, dims, base64)}}`;
  }
  const usage = d.noUsage ? '' : `,"usage":{"prompt_tokens":${inputs.tokens},"total_tokens":${inputs.tokens}}`;
  const answer = `{"object":"list","data":[${data}],"model":${JSON.stringify(model)}${usage}}`;
  if (!plain) return ex.answer(answer, d);
  if (answer.length < KEPT_MIN_BYTES || answer.length > KEPT_MAX_BYTES) return ex.answer(answer, d);
  const bytes = Buffer.from(answer);
  replies.set(memo, bytes);
  ex.answer(bytes, d);
}
