// Settlement, exactly once per reserved call: the supplier's usage when it
// reported one, else a local count of what was sent and produced (tiktoken in
// the worker pool), else, when that count fails, an upper estimate. A call
// that produced nothing is charged nothing.
import type { Metered, Outcome } from '../billing/types.js';
import type { ModelCall } from './call.js';

/**
 * The local count, or when it fails an upper estimate (issue 12 item 11:
 * never zero): input = the input bound that was reserved; output = the UTF-8
 * bytes of the text delivered (an o200k token covers at least one byte), at
 * most the output bound reserved (the supplier was held to it); image units =
 * the reply's, at most the bound's. So a failed
 * count charges at most the hold, never an overdraft of the gateway's making.
 */
export async function localCount(call: ModelCall, producedText: string, imageUnits: number): Promise<Metered> {
  try {
    const [inputTokens, outputTokens] = await call.deps.offload.countTokens([call.surface.inputText(call.prepared!), producedText]);
    // Image units are counted from the reply itself (the surface's meter), never by a tokenizer.
    return { inputTokens, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens, imageUnits, source: 'local' };
  } catch (err) {
    const bound = call.hold!.bound;
    call.deps.logger.warn({ rid: call.ctx.requestId, err: (err as Error)?.message }, 'settle: local token count failed; charging the upper estimate');
    const outputTokens = Math.min(Buffer.byteLength(producedText, 'utf8'), bound.outputTokens);
    return { inputTokens: bound.inputTokens, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens, imageUnits: Math.min(imageUnits, bound.imageUnits), source: 'estimate' };
  }
}

/** Settles once; later calls are no-ops. Returns what was charged for. */
export async function settle(call: ModelCall, metered: Metered | null, outcome: Outcome): Promise<void> {
  if (call.settled || call.hold === null) return;
  call.settled = true;
  const totalMs = performance.now() - call.ctx.startedAt;
  await call.deps.billing.settle(call.hold, metered, outcome, { ttfbMs: call.firstByteMs, totalMs }, call.supplier);
}

/**
 * For a call cut short: the supplier's usage if it came, else a local count
 * if anything was produced. Only text streams: their image units are the
 * bound's (0 on every streaming surface).
 */
export async function meterPartial(call: ModelCall, supplierUsage: Metered | null, producedText: string): Promise<Metered | null> {
  if (supplierUsage !== null) return supplierUsage;
  if (producedText === '') return null;
  return localCount(call, producedText, call.hold!.bound.imageUnits);
}
