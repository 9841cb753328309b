// A unary embeddings reply in two pure steps over plain data. decodeReply
// (the supplier's parsed JSON → the `data` array as the gateway's JSON, in
// UTF-8 bytes, and the supplier's usage) is the expensive one when a supplier
// answers float arrays: a batch of 128 × 3072 floats is ~8 MB of JSON to parse
// and 1.5 MB of float32 to encode. So the pipeline runs it in the pool for
// large replies (surfaces/reply-pool.ts; workers/decode-reply.ts), which moves
// those bytes back; renderReply only puts the call's identity and the settled
// usage around them, as separate parts: the 2.8 MB of a 128 × 3072 batch are
// written to the socket as they are, never joined into or encoded from a
// string on the event loop.
import { endianness } from 'node:os';
import type { Metered } from '../../billing/types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { answerBytes } from '../answer-bytes.js';
import type { CallInfo, ReplyMeter, ReplyParts } from '../surface.js';

const LITTLE_ENDIAN = endianness() === 'LE';

/** What the gateway keeps of a supplier's reply: plain data, so it crosses threads. */
export interface DecodedEmbeddings {
  /**
   * The `data` array, in input order, as UTF-8 JSON: `[{"object":"embedding","index":0,"embedding":"<base64>"},…]`.
   * A large one is a view from offset 0 of an answer buffer holding nothing else (answer-bytes.ts), so the pool moves it back.
   */
  data: Uint8Array;
  /** The supplier's prompt_tokens, or null when it reported none (then the input is counted locally). */
  promptTokens: number | null;
}

function isObject(v: unknown): v is Record<string, any> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * One vector as base64 of little-endian float32. A base64 string (what the
 * gateway asks for) passes through undecoded; a float array (a supplier that
 * ignores encoding_format) is rounded to float32 — exactly what Float32Array
 * stores for each number — and encoded. Anything else is a broken reply.
 */
export function embeddingBase64(embedding: unknown): string {
  if (typeof embedding === 'string') return embedding;
  if (!Array.isArray(embedding)) throw new GatewayError('upstream_error');
  const floats = new Float32Array(embedding.length);
  for (let i = 0; i < embedding.length; i++) {
    const x: unknown = embedding[i];
    if (typeof x !== 'number') throw new GatewayError('upstream_error');
    floats[i] = x;
  }
  const bytes = Buffer.from(floats.buffer, floats.byteOffset, floats.byteLength);
  if (!LITTLE_ENDIAN) bytes.swap32();
  return bytes.toString('base64');
}

/** Throws upstream_error unless the reply is a list of vectors whose indexes are 0…n−1, each once. */
export function decodeReply(upstream: unknown): DecodedEmbeddings {
  if (!isObject(upstream) || !Array.isArray(upstream.data) || upstream.data.length === 0) throw new GatewayError('upstream_error');
  const items = upstream.data as unknown[];
  // In input order, whatever order the supplier listed them in.
  const ordered = new Array<string | undefined>(items.length);
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    if (!isObject(item)) throw new GatewayError('upstream_error');
    const index = item.index ?? i;
    if (!Number.isInteger(index) || index < 0 || index >= items.length || ordered[index] !== undefined) throw new GatewayError('upstream_error');
    // JSON.stringify, not quotes around it: a supplier's string is not trusted to be base64.
    ordered[index] = `{"object":"embedding","index":${index},"embedding":${JSON.stringify(embeddingBase64(item.embedding))}}`;
  }
  const usage = isObject(upstream.usage) ? upstream.usage.prompt_tokens : undefined;
  return {
    data: answerBytes('[' + ordered.join(',') + ']'),
    promptTokens: typeof usage === 'number' && Number.isSafeInteger(usage) && usage >= 0 ? usage : null,
  };
}

/** Embeddings bill input tokens only (spec, "What the service does" 4): 0 output, 0 image units, whatever the supplier says. */
export function meterReply(reply: DecodedEmbeddings): ReplyMeter {
  const usage: Metered | null =
    reply.promptTokens === null ? null : { inputTokens: reply.promptTokens, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 0, imageUnits: 0, source: 'supplier' };
  // No text is produced: a local count (no supplier usage) counts the input alone.
  return { usage, imageUnits: 0, producedText: '', outcome: 'completed', warning: null };
}

/** EmbeddingsResponseBody: the model as the caller named it, usage as settled (prompt_tokens = total_tokens); in parts, the data's bytes as decoded. */
export function renderReply(reply: DecodedEmbeddings, call: CallInfo, settled: Metered): ReplyParts {
  const tokens = settled.inputTokens;
  return ['{"object":"list","data":', reply.data, `,"model":${JSON.stringify(call.model)},"usage":{"prompt_tokens":${tokens},"total_tokens":${tokens}}}`];
}
