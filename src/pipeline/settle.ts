// Settlement, exactly once per reserved call: the supplier's usage when it
// reported one, else a local count of what was sent and produced (tiktoken in
// the worker pool). A call that produced nothing is charged nothing.
import type { Metered, Outcome } from '../billing/types.js';
import type { ModelCall } from './call.js';

export async function localCount(call: ModelCall, producedText: string): Promise<Metered> {
  const [inputTokens, outputTokens] = await call.deps.offload.countTokens([call.surface.inputText(call.prepared!), producedText]);
  return { inputTokens, cachedInputTokens: 0, outputTokens, imageUnits: 0, source: 'local' };
}

/** Settles once; later calls are no-ops. Returns what was charged for. */
export async function settle(call: ModelCall, metered: Metered | null, outcome: Outcome): Promise<void> {
  if (call.settled || call.hold === null) return;
  call.settled = true;
  const totalMs = performance.now() - call.ctx.startedAt;
  await call.deps.billing.settle(call.hold, metered, outcome, { ttfbMs: call.firstByteMs, totalMs }, call.supplier);
}

/** For a call cut short: the supplier's usage if it came, else a local count if anything was produced. */
export async function meterPartial(call: ModelCall, supplierUsage: Metered | null, producedText: string): Promise<Metered | null> {
  if (supplierUsage !== null) return supplierUsage;
  if (producedText === '') return null;
  return localCount(call, producedText);
}
