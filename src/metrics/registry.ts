// Per-process counters and a latency histogram. Each worker keeps its own;
// /metrics merges the snapshots of every process (see cluster/metrics.ts), so
// whichever worker answers, the numbers cover the whole instance.

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
}

export class Metrics {
  private readonly requests = new Map<string, number>();
  private readonly latency = new Map<string, Histogram>();
  private readonly supplierErrors = new Map<string, number>();
  private readonly counters = new Map<string, number>();

  constructor(private readonly role = 'worker') {}

  /** A plain counter, rendered as tollgate_<name>_total. */
  count(name: string, n = 1): void {
    this.counters.set(name, (this.counters.get(name) ?? 0) + n);
  }

  observeRequest(surface: string, status: number, seconds: number): void {
    const key = surface + '|' + status;
    this.requests.set(key, (this.requests.get(key) ?? 0) + 1);
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
    return {
      requests: Object.fromEntries(this.requests),
      latency: Object.fromEntries(this.latency),
      supplierErrors: Object.fromEntries(this.supplierErrors),
      counters: Object.fromEntries(this.counters),
      rssBytes: { [`${this.role} ${process.pid}`]: process.memoryUsage.rss() },
    };
  }
}

function addCounts(into: Record<string, number>, from: Record<string, number>): void {
  for (const [k, v] of Object.entries(from)) into[k] = (into[k] ?? 0) + v;
}

export function mergeSnapshots(snaps: MetricsSnapshot[]): MetricsSnapshot {
  const out: MetricsSnapshot = { requests: {}, latency: {}, supplierErrors: {}, counters: {}, rssBytes: {} };
  for (const s of snaps) {
    addCounts(out.requests, s.requests);
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
