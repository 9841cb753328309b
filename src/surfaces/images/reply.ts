// A unary images reply in pure steps over plain data: decodeReply (the
// supplier's parsed JSON → its first n image entries, b64_json or url, in
// the order it answered, as the gateway's JSON text) and renderReply (that
// text + the call's time → the gateway's own ImagesResponseBody). An entry's
// base64 is megabytes: it is kept as the string the one JSON.parse made and
// written once into the `data` JSON, as UTF-8 bytes, so a large reply is
// decoded in the pool, its bytes are moved back (workers/decode-reply.ts) and
// written to the socket as they are (ReplyParts), never encoded on the event loop.
import type { Metered } from '../../billing/types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { answerBytes } from '../answer-bytes.js';
import type { CallInfo, ReplyMeter, ReplyParts, RequestFacts } from '../surface.js';

/** What the gateway keeps of a supplier's reply: plain data, so it crosses threads. */
export interface DecodedImages {
  /** The `data` array as UTF-8 JSON: `[{"b64_json":"…"},{"url":"…"}]`, at most n entries (a large one is a view from offset 0 of an answer buffer holding nothing else, answer-bytes.ts: moved back from the pool). */
  data: Uint8Array;
  /** Entries in `data`: the image units settled. */
  count: number;
  /** Entries the supplier returned beyond the n asked for (not passed on, not charged). */
  dropped: number;
}

function isObject(v: unknown): v is Record<string, any> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * Throws upstream_error unless every entry carries b64_json or a url. Other
 * members (revised_prompt, usage) are not passed on. A supplier answering
 * more images than the `n` asked for (meta.n) is answered with the first n:
 * the reservation held n units, and the caller asked for n.
 */
export function decodeReply(upstream: unknown, meta: RequestFacts): DecodedImages {
  if (!isObject(upstream) || !Array.isArray(upstream.data)) throw new GatewayError('upstream_error');
  const entries = upstream.data as unknown[];
  const n = typeof meta.n === 'number' ? meta.n : 1;
  const kept = Math.min(entries.length, n);
  let data = '[';
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i];
    let member: string;
    if (isObject(entry) && typeof entry.b64_json === 'string') member = '{"b64_json":' + JSON.stringify(entry.b64_json) + '}';
    else if (isObject(entry) && typeof entry.url === 'string') member = '{"url":' + JSON.stringify(entry.url) + '}';
    else throw new GatewayError('upstream_error');
    if (i < kept) data += (i === 0 ? '' : ',') + member;
  }
  return { data: answerBytes(data + ']'), count: kept, dropped: entries.length - kept };
}

/** Billed per image unit: the images passed on, no tokens. */
export function meterReply(reply: DecodedImages): ReplyMeter {
  const usage: Metered = { inputTokens: 0, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 0, imageUnits: reply.count, source: 'supplier' };
  const warning = reply.dropped === 0 ? null : `images: the supplier returned ${reply.dropped} image(s) more than n; the first n were answered and charged`;
  // A supplier that returned fewer images than asked still answered: the units returned are settled.
  return { usage, imageUnits: reply.count, producedText: '', outcome: 'completed', warning };
}

/** ImagesResponseBody: the gateway's time of the call, the entries as the supplier ordered them. */
export function renderReply(reply: DecodedImages, call: CallInfo): ReplyParts {
  return [`{"created":${call.created},"data":`, reply.data, '}'];
}
