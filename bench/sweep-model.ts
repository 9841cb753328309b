// The sweep's grid and how the best setting is chosen (pure: no processes).
import type { Aggregate } from './results.js';

export interface SweepSetting {
  /** e.g. "W2 T1" = WORKERS=2, PISCINA_MAX_THREADS=1; "bare" for the reference floor. */
  label: string;
  workers: number;
  threads: number;
}

export interface SweepCell {
  scenario: string;
  concurrency: number;
  /** By setting label. */
  results: Record<string, Aggregate>;
  /** The setting with the most req/s in this cell. */
  best: string;
}

export interface SweepVerdict {
  best: SweepSetting;
  /** Geometric mean over cells of (req/s ÷ the cell's best req/s); 1.0 = best everywhere. */
  scores: Record<string, number>;
  text: string;
}

export const sweepLabel = (workers: number, threads: number): string => `W${workers} T${threads}`;

export function sweepCells(aggs: Aggregate[], labels: string[]): SweepCell[] {
  const cells = new Map<string, SweepCell>();
  for (const a of aggs) {
    // Sweep samples are named "<scenario>@<connections>" and their targets by setting label.
    const [scenario, conns] = a.scenario.split('@') as [string, string];
    const key = a.scenario;
    let cell = cells.get(key);
    if (cell === undefined) cells.set(key, (cell = { scenario, concurrency: Number(conns), results: {}, best: '' }));
    cell.results[a.target] = a;
  }
  for (const cell of cells.values()) {
    let best = '';
    for (const l of labels) {
      const a = cell.results[l];
      if (a !== undefined && (best === '' || a.rps > cell.results[best]!.rps)) best = l;
    }
    cell.best = best;
  }
  return [...cells.values()].sort((x, y) => x.scenario.localeCompare(y.scenario) || x.concurrency - y.concurrency);
}

/**
 * The best setting for this machine: the highest geometric mean of relative
 * throughput over every cell (so no single scenario dominates); ties go to the
 * lower geometric-mean p99, then to fewer processes and threads (less memory).
 */
export function chooseBest(cells: SweepCell[], settings: SweepSetting[]): SweepVerdict {
  const scores: Record<string, number> = {};
  const p99: Record<string, number> = {};
  for (const s of settings) {
    let logSum = 0;
    let logP99 = 0;
    let n = 0;
    for (const c of cells) {
      const a = c.results[s.label];
      const top = c.results[c.best];
      if (a === undefined || top === undefined || a.rps <= 0) continue;
      logSum += Math.log(a.rps / top.rps);
      logP99 += Math.log(Math.max(a.latency.p99, 1e-3));
      n++;
    }
    scores[s.label] = n === 0 ? 0 : Math.round(Math.exp(logSum / n) * 1000) / 1000;
    p99[s.label] = n === 0 ? Infinity : Math.exp(logP99 / n);
  }
  const ranked = [...settings].sort(
    (a, b) => scores[b.label]! - scores[a.label]! || p99[a.label]! - p99[b.label]! || a.workers + a.threads - (b.workers + b.threads),
  );
  // Within 2% of the top score counts as a tie: prefer the cheaper setting among them.
  const top = scores[ranked[0]!.label]!;
  const near = ranked.filter((s) => scores[s.label]! >= top * 0.98);
  near.sort((a, b) => a.workers + a.threads - (b.workers + b.threads) || p99[a.label]! - p99[b.label]!);
  const best = near[0]!;
  const wins = cells.filter((c) => c.best === best.label).length;
  const text =
    `Best setting for this machine: WORKERS=${best.workers} PISCINA_MAX_THREADS=${best.threads} ` +
    `(${Math.round(scores[best.label]! * 100)}% of the best throughput per cell on geometric average, ` +
    `best outright in ${wins} of ${cells.length} cells` +
    (near.length > 1 ? `; settings within 2% of it: ${near.map((s) => s.label).join(', ')} — the one with fewest processes and threads is chosen` : '') +
    ').';
  return { best, scores, text };
}
