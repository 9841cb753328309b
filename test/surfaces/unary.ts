// A unary reply through a model-call surface's pure steps, in the order
// pipeline/answer-unary.ts runs them (decodeReply → meter → render), for the
// surface tests.
import type { Metered } from '../../src/billing/types.js';
import type { CallInfo, ModelSurface, ReplyMeter, ReplyParts, RequestFacts } from '../../src/surfaces/surface.js';

export interface Unary extends ReplyMeter {
  /** meter's usage (null: the pipeline would count locally). */
  metered: Metered | null;
  render(settled: Metered): string;
}

export function unary<R>(surface: ModelSurface<R>, upstream: unknown, call: CallInfo, meta: RequestFacts = {}): Unary {
  const reply = surface.decodeReply(upstream, meta);
  const meter = surface.meter(reply);
  return { ...meter, metered: meter.usage, render: (settled) => bodyText(surface.render(reply, call, settled)) };
}

/** A rendered body as the client receives it: text, or its parts written one after the other. */
export function bodyText(body: string | ReplyParts): string {
  if (typeof body === 'string') return body;
  return Buffer.concat(body.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : p))).toString('utf8');
}
