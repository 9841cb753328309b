// The one-screen report the suite and the soak end with: faults injected,
// requests sent, answers by class, money checked, holds leaked, RSS per
// process, and what the other clients saw during each fault.
import type { BystanderStats, CallResult } from './load.js';

export interface FaultLine {
  fault: string;
  injected: number;
  others: BystanderStats;
}

export class Report {
  readonly faults: FaultLine[] = [];
  readonly answers = new Map<string, number>();
  requests = 0;
  broken: CallResult[] = [];
  money = { orgs: 0, usageRows: 0, chargedMicros: 0, violations: [] as string[] };
  holdsLeaked = 0;
  rss = new Map<string, { start: number; peak: number; end: number; secondHalfSlopeMBPerMin?: number }>();
  invariantsFailed: string[] = [];

  count(r: CallResult): void {
    this.requests++;
    const k = `${r.surface} ${r.outcome}`;
    this.answers.set(k, (this.answers.get(k) ?? 0) + 1);
    if (r.outcome === 'broken' && this.broken.length < 20) this.broken.push(r);
  }

  /** A fault seen again (the soak repeats its schedule) adds to its line: one line per kind of fault, worst p99 kept. */
  fault(fault: string, injected: number, others: BystanderStats): void {
    const line = this.faults.find((f) => f.fault === fault);
    if (line === undefined) return void this.faults.push({ fault, injected, others: { ...others } });
    line.injected += injected;
    line.others = { sent: line.others.sent + others.sent, errors: line.others.errors + others.errors, p99: Math.max(line.others.p99, others.p99), samples: line.others.samples };
  }

  rssFrom(series: Map<string, number[]>): void {
    for (const [label, s] of series) {
      const half = s.slice(Math.floor(s.length / 2));
      this.rss.set(label, { start: s[0], peak: Math.max(...s), end: s[s.length - 1], secondHalfSlopeMBPerMin: undefined });
      if (half.length >= 4) this.rss.get(label)!.secondHalfSlopeMBPerMin = slope(half);
    }
  }

  /** Per-sample slope is turned into MB per minute by the caller's sampling interval. */
  scaleSlopes(sampleMs: number): void {
    for (const v of this.rss.values()) if (v.secondHalfSlopeMBPerMin !== undefined) v.secondHalfSlopeMBPerMin = (v.secondHalfSlopeMBPerMin / 1048576) * (60_000 / sampleMs);
  }

  ok(): boolean {
    return this.invariantsFailed.length === 0 && this.holdsLeaked === 0 && this.money.violations.length === 0 && this.broken.length === 0;
  }

  render(title: string): string {
    const mb = (b: number): string => (b / 1048576).toFixed(0);
    const lines = [`── ${title} ──`];
    lines.push(`faults injected: ${this.faults.map((f) => `${f.fault}×${f.injected}`).join(', ') || 'none'}`);
    lines.push(`requests sent: ${this.requests}`);
    const bySurface = new Map<string, string[]>();
    for (const [k, v] of [...this.answers].sort()) {
      const [surface, outcome] = k.split(' ');
      bySurface.set(surface, [...(bySurface.get(surface) ?? []), `${outcome} ${v}`]);
    }
    for (const [s, v] of bySurface) lines.push(`  ${s.padEnd(17)} ${v.join(', ')}`);
    lines.push(`money checked: ${this.money.orgs} organizations, ${this.money.usageRows} usage rows, ${(this.money.chargedMicros / 1e6).toFixed(6)} charged; ${this.money.violations.length} violations`);
    for (const v of this.money.violations.slice(0, 5)) lines.push(`  ✗ ${v}`);
    lines.push(`holds leaked: ${this.holdsLeaked}`);
    for (const [label, v] of this.rss) {
      const trend = v.secondHalfSlopeMBPerMin === undefined ? '' : `, second half ${v.secondHalfSlopeMBPerMin >= 0 ? '+' : ''}${v.secondHalfSlopeMBPerMin.toFixed(2)} MB/min`;
      lines.push(`RSS ${label.padEnd(16)} start ${mb(v.start)} MB, peak ${mb(v.peak)} MB, end ${mb(v.end)} MB${trend}`);
    }
    if (this.faults.length > 0) lines.push('other clients during each fault:');
    for (const f of this.faults) {
      const rate = f.others.sent === 0 ? 0 : (100 * f.others.errors) / f.others.sent;
      lines.push(`  ${f.fault.padEnd(30)} ${f.others.sent} calls, ${rate.toFixed(1)}% errors, worst p99 ${f.others.p99.toFixed(0)} ms`);
    }
    for (const b of this.broken.slice(0, 5)) lines.push(`  ✗ broken answer: ${b.surface} ${b.status} ${b.fault}`);
    for (const v of this.invariantsFailed) lines.push(`  ✗ ${v}`);
    lines.push(this.ok() ? 'invariants: all held' : 'invariants: FAILED');
    return lines.join('\n');
  }

  toJSON(): unknown {
    return {
      faults: this.faults,
      requests: this.requests,
      answers: Object.fromEntries(this.answers),
      broken: this.broken,
      money: this.money,
      holds_leaked: this.holdsLeaked,
      rss: Object.fromEntries(this.rss),
      invariants_failed: this.invariantsFailed,
      ok: this.ok(),
    };
  }
}

/** Least-squares slope of evenly spaced samples (per sample). */
export function slope(ys: number[]): number {
  const n = ys.length;
  const mx = (n - 1) / 2;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += (i - mx) * (ys[i] - my);
    den += (i - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}
