// Settlement, exactly once per reserved call: the supplier's usage when it
// reported one, else a local count of what was sent and produced (tiktoken in
// the worker pool), else, when that count fails, an upper estimate. A call
// that failed before any output is charged nothing; one cancelled after it
// was dispatched is charged its input and what was delivered (issue 30 item
// 12: the supplier read the prompt, and bills the operator for it).
import type { Metered, Outcome } from '../billing/types.js';
import type { UsageRow } from '../ledger/protocol.js';
import type { Metrics, SeriesCell } from '../metrics/registry.js';
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
    const [inputTokens, outputTokens] = await call.deps.offload.countTokens([call.surface.inputText(call.prepared!), producedText], call.key!.orgId);
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
  const from = performance.now();
  const totalMs = from - call.ctx.startedAt;
  const usage = await call.deps.billing.settle(call.hold, metered, outcome, { ttfbMs: call.firstByteMs, totalMs }, call.supplier);
  if (call.trace !== null) call.trace.stage('settlement', from, performance.now(), { 'tollgate.outcome': outcome, 'tollgate.charged_micros': usage?.chargedMicros ?? 0 });
  call.usage = usage;
  if (usage !== null) countUsage(call.deps.metrics, call.model!.canonicalName, usage);
}

/**
 * The traffic's metrics, from the row the ledger took, so they move by
 * exactly its figures. Labels: the catalog's canonical model name, the
 * surface (protocol) and the outcome — bounded by the catalog, never by keys
 * or organizations (docs/metrics.md). No label escaping: a canonical name
 * matches ^[A-Za-z0-9][A-Za-z0-9._:/-]*$ (config/catalog.schema.json).
 */
function countUsage(metrics: Metrics, model: string, u: UsageRow): void {
  const cells = usageCells(metrics, model, u.surface, u.outcome);
  cells[0]!.value += 1;
  cells[1]!.value += u.inputTokens;
  cells[2]!.value += u.cachedInputTokens;
  cells[3]!.value += u.outputTokens;
  cells[4]!.value += u.imageUnits;
  cells[5]!.value += u.chargedMicros;
}

const USAGE_SERIES = ['usage_calls', 'usage_input_tokens', 'usage_cached_input_tokens', 'usage_output_tokens', 'usage_image_units', 'usage_charged_micros'];
type CellsByLabels = Map<string, Map<string, Map<string, SeriesCell[]>>>;
/**
 * Per registry (a test process may run several gateways), model → surface →
 * outcome → the six series' cells: made once per label set (bounded by the
 * catalog), so a call adds to six numbers and builds no string.
 */
const cellsByRegistry = new WeakMap<Metrics, CellsByLabels>();

function usageCells(metrics: Metrics, model: string, surface: string, outcome: string): SeriesCell[] {
  let byModel = cellsByRegistry.get(metrics);
  if (byModel === undefined) cellsByRegistry.set(metrics, (byModel = new Map()));
  let bySurface = byModel.get(model);
  if (bySurface === undefined) byModel.set(model, (bySurface = new Map()));
  let byOutcome = bySurface.get(surface);
  if (byOutcome === undefined) bySurface.set(surface, (byOutcome = new Map()));
  let cells = byOutcome.get(outcome);
  if (cells === undefined) {
    const labels = `{model="${model}",surface="${surface}",outcome="${outcome}"}`;
    byOutcome.set(outcome, (cells = USAGE_SERIES.map((n) => metrics.seriesCell(n + labels))));
  }
  return cells;
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

/**
 * A call whose client left after it was dispatched (docs/billing.md, "When
 * nothing counts"): the supplier's usage if it came; else the input sent,
 * counted locally and at most the input bound reserved, plus the text
 * delivered — `metered_source: "estimate"`, since what a supplier bills for
 * a request it did not finish is not known. No image units: none was
 * delivered (images bill per unit and reserve no input, so they cost
 * nothing). A failed count falls back to localCount's upper estimate.
 */
export async function meterCancelled(call: ModelCall, supplierUsage: Metered | null, producedText: string): Promise<Metered> {
  if (supplierUsage !== null) return supplierUsage;
  const bound = call.hold!.bound;
  if (bound.inputTokens === 0 && producedText === '') return { inputTokens: 0, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 0, imageUnits: 0, source: 'estimate' };
  const counted = await localCount(call, producedText, 0);
  return { ...counted, inputTokens: Math.min(counted.inputTokens, bound.inputTokens), source: 'estimate' };
}

/**
 * Settles a call that ended with no answer from the pipeline's stages (no
 * supplier answered, the client left): failed, nothing charged; cancelled
 * before dispatch, nothing charged; cancelled after it, meterCancelled.
 */
export async function settleUnanswered(call: ModelCall, dispatched: boolean): Promise<void> {
  if (call.settled || call.hold === null) return;
  if (!call.ctx.aborted) return settle(call, null, 'failed');
  await settle(call, dispatched ? await meterCancelled(call, null, '') : null, 'cancelled');
}
