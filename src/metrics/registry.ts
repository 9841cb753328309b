// Per-process counters and a latency histogram. Each worker keeps its own;
// /metrics merges the snapshots of every process (see cluster/metrics.ts), so
// whichever worker answers, the numbers cover the whole instance. Gauges are
// read from their owners when a snapshot is taken (addGauges), never kept up
// to date on a hot path. Every name is listed in docs/metrics.md.
import { loopMonitor, type LoopReader } from './event-loop.js';

/** Upper bounds in seconds; wide enough for minute-long streams. */
export const LATENCY_BUCKETS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120,
];

interface Histogram {
  buckets: number[]; // non-cumulative counts, one per bound plus +Inf
  sum: number;
  count: number;
}

export interface MetricsSnapshot {
  requests: Record<string, number>; // "surface|status" → count
  latency: Record<string, Histogram>; // surface → histogram
  supplierErrors: Record<string, number>; // "supplier|kind" → count
  counters: Record<string, number>; // plain counters by metric name
  rssBytes: Record<string, number>; // "role pid" → resident memory
  refusals: Record<string, number>; // error code answered → count
  gauges: Record<string, number>; // series (name without prefix, with labels) → value; summed across processes
}

/** Type and help of the series that gauge providers report (name without the tollgate_ prefix, without labels). */
const SERIES: Record<string, [type: 'gauge' | 'counter' | 'summary', help: string]> = {
  ledger_open_holds: ['gauge', 'Open holds in the ledger actors this instance hosts.'],
  ledger_held_micros: ['gauge', 'Money held by those holds, in micros (balance and package).'],
  ledger_oldest_hold_seconds: ['gauge', 'Age of the oldest open hold; never above billing.hold_max_ms.'],
  ledger_active_organizations: ['gauge', 'Organizations whose actor is in memory here.'],
  ledger_journal_backlog: ['gauge', 'Settlements applied in memory and waiting to be written to the store.'],
  ledger_journal_flush_lag_seconds: ['gauge', 'How long the oldest waiting settlement has waited.'],
  ledger_overdraft_micros_total: ['counter', 'Money charged above holds (usage rows\' overdraft) by the ledger here, in micros.'],
  ledger_overdraft_settlements_total: ['counter', 'Settlements charged above their hold by the ledger here.'],
  ledger_store_behind_waits_total: ['counter', 'Reservations held back because the journal was behind billing.journal_max_lag_ms.'],
  ledger_store_behind_refusals_total: ['counter', 'Reservations refused (503) after waiting for a journal that stayed behind.'],
  ledger_store_copy_writes_total: ['counter', 'Journal batches written to the store by COPY (first attempts).'],
  ledger_store_statement_writes_total: ['counter', 'Journal batches written by the statement: retries, and first attempts that met a row already stored.'],
  ledger_expired_holds_total: ['counter', 'Holds released by their lease or maximum age without a settlement.'],
  ledger_progress_settlements_total: ['counter', 'Holds settled on their stream\'s last progress after their owner died (outcome interrupted).'],
  ledger_worker_settlements_total: ['counter', 'Calls settled in their own HTTP worker from its allotments, told to the ledger per batch.'],
  ledger_reservations_total: ['counter', 'Reservations the ledger actors here answered: each a worker\'s round trip (a call its allotment could not admit, or one asking a grant).'],
  ledger_allotment_grants_total: ['counter', 'Allotments granted to workers or topped up by the ledger actors here.'],
  ledger_shards_owned: ['gauge', 'Redis ledger: shards this instance owns now.'],
  ledger_shard_acquisitions_total: ['counter', 'Redis ledger: shards this instance acquired.'],
  ledger_shard_takeovers_total: ['counter', 'Redis ledger: shards acquired that another instance had owned last.'],
  ledger_shards_lost_total: ['counter', 'Redis ledger: shards whose lease this instance lost (a stall, another owner).'],
  usage_calls: ['counter', 'Settled calls (usage rows delivered to the ledger), by model, surface and outcome.'],
  usage_input_tokens: ['counter', 'Input tokens charged (cached ones included), by model, surface and outcome: the usage rows\' input_tokens.'],
  usage_cached_input_tokens: ['counter', 'The part of the input tokens served from the supplier\'s cache, by model, surface and outcome.'],
  usage_output_tokens: ['counter', 'Output tokens charged, by model, surface and outcome.'],
  usage_image_units: ['counter', 'Image units charged, by model, surface and outcome.'],
  usage_charged_micros: ['counter', 'Money charged, in micros (the usage rows\' charged_micros), by model, surface and outcome.'],
  billing_reserved_micros: ['counter', 'Money held by admitted reservations, in micros, by surface.'],
  billing_refused_micros: ['counter', 'Money that reservations refused for funds (402) asked for, in micros, by surface.'],
  billing_funds_refusals: ['counter', 'Reservations refused for funds (402), by surface.'],
  supplier_circuit_open: ['gauge', 'Workers of this instance whose circuit for this supplier is open now.'],
  event_loop_delay_seconds: ['summary', 'Event-loop delay of each process since the previous scrape.'],
  event_loop_window_delay_seconds: ['summary', 'Event-loop delay of each HTTP worker over the last complete minute (metrics/event-loop.ts): p99 and maximum, the longest task.'],
};

/** The process's event-loop monitor as this summary reads it: emptied at each snapshot. */
let loopDelay: LoopReader | null = null;

/** A labelled counter's value (Metrics.seriesCell). */
export interface SeriesCell {
  value: number;
}

export class Metrics {
  private readonly requests = new Map<string, number>();
  private readonly latency = new Map<string, Histogram>();
  private readonly supplierErrors = new Map<string, number>();
  private readonly counters = new Map<string, number>();
  private readonly refusals = new Map<string, number>();
  /** Labelled counters (series → its cell), e.g. usage_output_tokens{model="…",…}: rendered with the gauges, typed by SERIES. */
  private readonly series = new Map<string, SeriesCell>();
  private readonly gaugeSources: Array<() => Record<string, number>> = [];

  constructor(private readonly role = 'worker') {
    loopDelay ??= loopMonitor.reader();
  }

  /** A source of gauges (series → value), read at every snapshot. */
  addGauges(source: () => Record<string, number>): void {
    this.gaugeSources.push(source);
  }

  /** A plain counter, rendered as tollgate_<name>_total. */
  count(name: string, n = 1): void {
    this.counters.set(name, (this.counters.get(name) ?? 0) + n);
  }

  /**
   * A labelled counter: `series` is the name without the tollgate_ prefix and
   * with its labels, and must be listed in SERIES. Labels come from bounded
   * sets only (catalog models, surfaces, outcomes): never keys or organizations.
   */
  countSeries(series: string, n: number): void {
    this.seriesCell(series).value += n;
  }

  /**
   * The cell of a labelled counter (same rules as countSeries), for a caller
   * that counts it on every call: it keeps the cell per label set, so a count
   * is one addition, with no series name built, hashed or looked up.
   */
  seriesCell(series: string): SeriesCell {
    let cell = this.series.get(series);
    if (cell === undefined) this.series.set(series, (cell = { value: 0 }));
    return cell;
  }

  observeRequest(surface: string, status: number, seconds: number, refusal: string | null = null): void {
    const key = surface + '|' + status;
    this.requests.set(key, (this.requests.get(key) ?? 0) + 1);
    if (refusal !== null) this.refusals.set(refusal, (this.refusals.get(refusal) ?? 0) + 1);
    let h = this.latency.get(surface);
    if (h === undefined) {
      h = { buckets: new Array<number>(LATENCY_BUCKETS.length + 1).fill(0), sum: 0, count: 0 };
      this.latency.set(surface, h);
    }
    let i = 0;
    while (i < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[i]) i++;
    h.buckets[i]++;
    h.sum += seconds;
    h.count++;
  }

  supplierError(supplier: string, kind: string): void {
    const key = supplier + '|' + kind;
    this.supplierErrors.set(key, (this.supplierErrors.get(key) ?? 0) + 1);
  }

  snapshot(): MetricsSnapshot {
    const gauges: Record<string, number> = {};
    for (const [series, cell] of this.series) gauges[series] = cell.value;
    for (const source of this.gaugeSources) {
      try {
        addCounts(gauges, source());
      } catch {
        // A source that fails leaves its series out of this scrape rather than failing it.
      }
    }
    const who = `role="${this.role}",pid="${process.pid}"`;
    // The timer's intervals, as Node's monitor gave them since issue 16 (the bench reads them so in every build): 10 ms plus the delay.
    const loop = loopDelay === null ? null : loopMonitor.take(loopDelay);
    if (loop !== null) {
      gauges[`event_loop_delay_seconds{${who},quantile="0.5"}`] = loop.p50 / 1e9;
      gauges[`event_loop_delay_seconds{${who},quantile="0.99"}`] = loop.p99 / 1e9;
      gauges[`event_loop_delay_seconds{${who},quantile="1"}`] = loop.max / 1e9;
    }
    return {
      requests: Object.fromEntries(this.requests),
      latency: Object.fromEntries(this.latency),
      supplierErrors: Object.fromEntries(this.supplierErrors),
      counters: Object.fromEntries(this.counters),
      rssBytes: { [`${this.role} ${process.pid}`]: process.memoryUsage.rss() },
      refusals: Object.fromEntries(this.refusals),
      gauges,
    };
  }
}

function addCounts(into: Record<string, number>, from: Record<string, number>): void {
  for (const [k, v] of Object.entries(from)) into[k] = (into[k] ?? 0) + v;
}

export function mergeSnapshots(snaps: MetricsSnapshot[]): MetricsSnapshot {
  const out: MetricsSnapshot = { requests: {}, latency: {}, supplierErrors: {}, counters: {}, rssBytes: {}, refusals: {}, gauges: {} };
  for (const s of snaps) {
    addCounts(out.requests, s.requests);
    addCounts(out.refusals, s.refusals ?? {});
    addCounts(out.gauges, s.gauges ?? {});
    addCounts(out.supplierErrors, s.supplierErrors);
    addCounts(out.counters, s.counters);
    Object.assign(out.rssBytes, s.rssBytes);
    for (const [surface, h] of Object.entries(s.latency)) {
      const into = (out.latency[surface] ??= { buckets: new Array<number>(h.buckets.length).fill(0), sum: 0, count: 0 });
      h.buckets.forEach((n, i) => (into.buckets[i] += n));
      into.sum += h.sum;
      into.count += h.count;
    }
  }
  return out;
}

export function renderPrometheus(s: MetricsSnapshot): string {
  const lines: string[] = [];
  lines.push('# HELP tollgate_requests_total Finished HTTP requests by surface and status.');
  lines.push('# TYPE tollgate_requests_total counter');
  for (const [key, n] of Object.entries(s.requests)) {
    const [surface, status] = key.split('|');
    lines.push(`tollgate_requests_total{surface="${surface}",status="${status}"} ${n}`);
  }
  lines.push('# HELP tollgate_request_duration_seconds Time from request to last byte, by surface.');
  lines.push('# TYPE tollgate_request_duration_seconds histogram');
  for (const [surface, h] of Object.entries(s.latency)) {
    let cumulative = 0;
    LATENCY_BUCKETS.forEach((le, i) => {
      cumulative += h.buckets[i];
      lines.push(`tollgate_request_duration_seconds_bucket{surface="${surface}",le="${le}"} ${cumulative}`);
    });
    lines.push(`tollgate_request_duration_seconds_bucket{surface="${surface}",le="+Inf"} ${h.count}`);
    lines.push(`tollgate_request_duration_seconds_sum{surface="${surface}"} ${h.sum}`);
    lines.push(`tollgate_request_duration_seconds_count{surface="${surface}"} ${h.count}`);
  }
  lines.push('# HELP tollgate_supplier_errors_total Failed supplier attempts by supplier and kind.');
  lines.push('# TYPE tollgate_supplier_errors_total counter');
  for (const [key, n] of Object.entries(s.supplierErrors)) {
    const [supplier, kind] = key.split('|');
    lines.push(`tollgate_supplier_errors_total{supplier="${supplier}",kind="${kind}"} ${n}`);
  }
  lines.push('# HELP tollgate_refusals_total Requests answered with an error, by the error code of their envelope.');
  lines.push('# TYPE tollgate_refusals_total counter');
  for (const [code, n] of Object.entries(s.refusals)) lines.push(`tollgate_refusals_total{code="${code}"} ${n}`);
  const byName = new Map<string, string[]>();
  for (const [series, v] of Object.entries(s.gauges)) {
    const brace = series.indexOf('{');
    const name = brace < 0 ? series : series.slice(0, brace);
    const list = byName.get(name) ?? [];
    list.push(`tollgate_${series} ${v}`);
    byName.set(name, list);
  }
  for (const [name, list] of byName) {
    const [type, help] = SERIES[name] ?? ['gauge', ''];
    if (help !== '') lines.push(`# HELP tollgate_${name} ${help}`);
    lines.push(`# TYPE tollgate_${name} ${type}`);
    lines.push(...list);
  }
  for (const [name, n] of Object.entries(s.counters)) {
    lines.push(`# TYPE tollgate_${name}_total counter`);
    lines.push(`tollgate_${name}_total ${n}`);
  }
  lines.push('# HELP tollgate_process_resident_memory_bytes Resident memory of each process of this instance.');
  lines.push('# TYPE tollgate_process_resident_memory_bytes gauge');
  for (const [who, bytes] of Object.entries(s.rssBytes)) {
    const [role, pid] = who.split(' ');
    lines.push(`tollgate_process_resident_memory_bytes{role="${role}",pid="${pid}"} ${bytes}`);
  }
  return lines.join('\n') + '\n';
}
