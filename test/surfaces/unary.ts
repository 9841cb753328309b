// A unary reply through a model-call surface's pure steps, in the order
// pipeline/answer-unary.ts runs them (decodeReply → meter → render), for the
// surface tests.
import type { Metered } from '../../src/billing/types.js';
import type { CallInfo, ModelSurface, ReplyMeter, RequestFacts } from '../../src/surfaces/surface.js';

export interface Unary extends ReplyMeter {
  /** meter's usage (null: the pipeline would count locally). */
  metered: Metered | null;
  render(settled: Metered): string;
}

export function unary<R>(surface: ModelSurface<R>, upstream: unknown, call: CallInfo, meta: RequestFacts = {}): Unary {
  const reply = surface.decodeReply(upstream, meta);
  const meter = surface.meter(reply);
  return { ...meter, metered: meter.usage, render: (settled) => surface.render(reply, call, settled) };
}
