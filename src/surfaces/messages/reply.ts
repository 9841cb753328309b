// A unary messages reply in two pure steps over plain data, so either can
// run in the worker-thread pool when a reply is large: decodeReply (the
// supplier's parsed JSON → the blocks, stop reason and usage the gateway
// keeps) and renderReply (those + the call's identity + the settled usage →
// the gateway's own MessagesReply text).
import type { Metered, Outcome } from '../../billing/types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { CallInfo, ReplyMeter } from '../surface.js';
import { meter, normalizeStop, supplierUsage, usageJson, type SupplierUsage } from './usage.js';

export type ReplyBlock = { type: 'text'; text: string } | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> };

/** What the gateway keeps of a supplier's reply: plain data only. */
export interface DecodedReply {
  content: ReplyBlock[];
  stopReason: string;
  stopSequence: string | null;
  usage: SupplierUsage | null;
  /** Text and tool arguments produced, for a local count when the supplier reported no usage. */
  produced: string;
}

function isObject(v: unknown): v is Record<string, any> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Throws upstream_error when the reply is not a message. Blocks other than text and tool_use (thinking, server tools) are not passed on. */
export function decodeReply(upstream: unknown): DecodedReply {
  if (!isObject(upstream) || !Array.isArray(upstream.content)) throw new GatewayError('upstream_error');
  const content: ReplyBlock[] = [];
  let produced = '';
  for (const b of upstream.content as unknown[]) {
    if (!isObject(b)) continue;
    if (b.type === 'text' && typeof b.text === 'string') {
      content.push({ type: 'text', text: b.text });
      produced += b.text;
    } else if (b.type === 'tool_use') {
      const input = isObject(b.input) ? b.input : {};
      content.push({ type: 'tool_use', id: String(b.id ?? ''), name: String(b.name ?? ''), input });
      produced += JSON.stringify(input);
    }
  }
  return {
    content,
    stopReason: normalizeStop(upstream.stop_reason),
    stopSequence: typeof upstream.stop_sequence === 'string' ? upstream.stop_sequence : null,
    usage: isObject(upstream.usage) ? supplierUsage(upstream.usage) : null,
    produced,
  };
}

/** A cut answer (the bound reached) is incomplete, as chat's `length` is. */
function replyOutcome(reply: DecodedReply): Outcome {
  return reply.stopReason === 'max_tokens' ? 'incomplete' : 'completed';
}

export function meterReply(reply: DecodedReply): ReplyMeter {
  return { usage: reply.usage === null ? null : meter(reply.usage), imageUnits: 0, producedText: reply.produced, outcome: replyOutcome(reply), warning: null };
}

/** MessagesReply: the gateway's request id, the model as the caller named it, the usage as settled. */
export function renderReply(reply: DecodedReply, call: CallInfo, settled: Metered): string {
  return (
    `{"id":${JSON.stringify(call.requestId)},"type":"message","role":"assistant","model":${JSON.stringify(call.model)},` +
    `"content":${JSON.stringify(reply.content)},"stop_reason":"${reply.stopReason}","stop_sequence":${JSON.stringify(reply.stopSequence)},` +
    `"usage":${usageJson(settled)}}`
  );
}
