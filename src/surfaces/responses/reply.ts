// A unary responses reply in two pure steps over plain data, so either can
// run in the worker-thread pool when a reply is large: decodeReply (the
// supplier's parsed JSON → the items, status and usage the gateway keeps)
// and renderReply (those + the call's identity + the settled usage → the
// gateway's own ResponsesReply text).
import type { Metered, Outcome } from '../../billing/types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { CallInfo, ReplyMeter } from '../surface.js';
import { isObject, outputItem, producedText, withIds, type OutputItem } from './items.js';
import { meter, supplierUsage, usageJson, type SupplierUsage } from './usage.js';

/** What the gateway keeps of a supplier's reply: plain data only. */
export interface DecodedReply {
  output: OutputItem[];
  /** null when completed; why the answer stopped short otherwise (e.g. max_output_tokens). */
  incompleteReason: string | null;
  usage: SupplierUsage | null;
  /** Text, arguments and tool input produced, for a local count when the supplier reported no usage. */
  produced: string;
}

/** The reason a supplier gave for an incomplete response; the bound reached when it gave none. */
export function incompleteReason(response: Record<string, any>): string {
  const reason = response.incomplete_details?.reason;
  return typeof reason === 'string' && reason.length > 0 ? reason : 'max_output_tokens';
}

/** Throws upstream_error unless the reply is a completed or incomplete response. */
export function decodeReply(upstream: unknown): DecodedReply {
  if (!isObject(upstream) || !Array.isArray(upstream.output)) throw new GatewayError('upstream_error');
  const status = upstream.status ?? 'completed';
  if (status !== 'completed' && status !== 'incomplete') throw new GatewayError('upstream_error');
  const output: OutputItem[] = [];
  let produced = '';
  for (const raw of upstream.output as unknown[]) {
    const item = outputItem(raw);
    if (item === null) continue;
    output.push(item);
    produced += producedText(item);
  }
  return {
    output,
    incompleteReason: status === 'incomplete' ? incompleteReason(upstream) : null,
    usage: isObject(upstream.usage) ? supplierUsage(upstream.usage) : null,
    produced,
  };
}

/** A cut answer (the bound reached, or filtered) is incomplete, as chat's `length` is. */
function replyOutcome(reply: DecodedReply): Outcome {
  return reply.incompleteReason === null ? 'completed' : 'incomplete';
}

export function meterReply(reply: DecodedReply): ReplyMeter {
  return { usage: reply.usage === null ? null : meter(reply.usage), imageUnits: 0, producedText: reply.produced, outcome: replyOutcome(reply), warning: null };
}

/** The members every snapshot and reply starts with: identity, object, creation time, model as the caller named it. */
export function headJson(call: CallInfo): string {
  return `{"id":${JSON.stringify(responseId(call))},"object":"response","created_at":${call.created},"model":${JSON.stringify(call.model)}`;
}

/** A response's id is the service's request identity (the X-Request-Id header). */
export function responseId(call: CallInfo): string {
  return call.requestId;
}

/** status, incomplete_details, output and usage: the end of a finished response, as settled. */
export function finishedJson(output: OutputItem[], reason: string | null, settled: Metered, reasoning: number): string {
  const status = reason === null ? 'completed' : 'incomplete';
  const details = reason === null ? 'null' : `{"reason":${JSON.stringify(reason)}}`;
  return `"status":"${status}","incomplete_details":${details},"output":${JSON.stringify(output)},"usage":${usageJson(settled, reasoning)}}`;
}

/** ResponsesReply: the gateway's id, the model as the caller named it, the usage as settled. */
export function renderReply(reply: DecodedReply, call: CallInfo, settled: Metered): string {
  return headJson(call) + ',' + finishedJson(withIds(reply.output, call.requestId), reply.incompleteReason, settled, reply.usage?.reasoning ?? 0);
}
