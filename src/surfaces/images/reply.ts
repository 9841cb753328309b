// A unary images reply in two pure steps over plain data: decodeReply (the
// supplier's parsed JSON → its image entries, b64_json or url, in the order
// it answered) and renderReply (those + the call's time → the gateway's own
// ImagesResponseBody). An entry's base64 is megabytes: it is kept as the
// string the one JSON.parse made and written back with no decoding.
import type { Metered } from '../../billing/types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { CallInfo } from '../surface.js';

export type ImageEntry = { b64_json: string } | { url: string };

export interface DecodedImages {
  data: ImageEntry[];
}

function isObject(v: unknown): v is Record<string, any> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Throws upstream_error unless every entry carries b64_json or a url. Other members (revised_prompt, usage) are not passed on. */
export function decodeReply(upstream: unknown): DecodedImages {
  if (!isObject(upstream) || !Array.isArray(upstream.data)) throw new GatewayError('upstream_error');
  const data: ImageEntry[] = [];
  for (const entry of upstream.data as unknown[]) {
    if (isObject(entry) && typeof entry.b64_json === 'string') data.push({ b64_json: entry.b64_json });
    else if (isObject(entry) && typeof entry.url === 'string') data.push({ url: entry.url });
    else throw new GatewayError('upstream_error');
  }
  return { data };
}

/** Billed per image unit: the images actually returned, no tokens. */
export function replyMetered(reply: DecodedImages): Metered {
  return { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, imageUnits: reply.data.length, source: 'supplier' };
}

/** ImagesResponseBody: the gateway's time of the call, the entries as the supplier ordered them. */
export function renderReply(reply: DecodedImages, call: CallInfo): string {
  return `{"created":${call.created},"data":${JSON.stringify(reply.data)}}`;
}
