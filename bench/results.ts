// From raw samples (one per job) to the figures the report states: per target
// and scenario, rounds merged; the overhead over the floor; and the issue's
// mixed scenarios against their baselines (the targets: goals.ts).
import { Histogram, type LatencySummary } from './histogram.js';
import type { LoopDelay } from './event-loop.js';
import type { Sample } from './measure.js';
import type { TargetKind } from './targets.js';

export interface Aggregate {
  scenario: string;
  target: string;
  kind: TargetKind;
  concurrency: number;
  rounds: number;
  requests: number;
  errors: number;
  rps: number;
  latency: LatencySummary;
  ttfb: LatencySummary | null;
  gap: LatencySummary | null;
  /** CPU ms of the target's processes per 1,000 requests (= CPU seconds per 1,000 requests × 1000); null when unknown. */
  cpuMsPerK: number | null;
  /** By role; for HTTP workers also `worker-loop`: their main threads alone (the event loop, without pool threads). */
  cpuMsPerKByRole: Record<string, number>;
  /** Context switches per request by role (all of a role's processes and threads): how often a call puts something to sleep and wakes it, steadier than CPU time on a noisy VM. */
  switchesPerCallByRole: Record<string, number>;
  /** The target's CPU over wall time: 1.0 = one core busy. */
  targetCores: number | null;
  /** Load generator + simulator CPU over wall time: near 1.0 means the load core, not the target, was the limit. */
  loadCores: number;
  loadgenCpuMsPerK: number;
  /** Highest resident memory seen per role (largest process of that role), bytes. */
  peakRssByRole: Record<string, number>;
  /** Highest sum over all of the target's processes at one instant (proportional set sizes: shared pages once), bytes. */
  peakTotalBytes: number;
  /** Processes per role (largest count seen in one job): how many HTTP workers a Tollgate ran. */
  processCount: Record<string, number>;
  /** The HTTP workers' event loop over the rounds (bench/event-loop.ts), ms: the longest single task of any round, the highest p99 delay of any round, and each round's longest task; null when the target does not report it. */
  loopDelay?: { maxMs: number; p99Ms: number; byRoundMaxMs: number[] } | null;
  /** Added over the bare proxy in the same scenario (ms), and ratios; null for the bare proxy itself or when absent. */
  addedP50: number | null;
  addedP99: number | null;
  vsBare: { rps: number; cpu: number | null; p50: number } | null;
  vsDirect: { rps: number; cpu: number | null; p50: number } | null;
}

const r2 = (x: number): number => Math.round(x * 100) / 100;
const r3 = (x: number): number => Math.round(x * 1000) / 1000;

function loopDelayOf(group: Sample[]): Aggregate['loopDelay'] {
  const rounds = group.map((s) => s.loopDelay).filter((d): d is LoopDelay => d != null);
  if (rounds.length === 0) return null;
  return {
    maxMs: r2(Math.max(...rounds.map((d) => d.maxMs))),
    p99Ms: r2(Math.max(...rounds.map((d) => d.p99Ms))),
    byRoundMaxMs: rounds.map((d) => r2(d.maxMs)),
  };
}

export function aggregate(samples: Sample[], kinds: Map<string, TargetKind>): Aggregate[] {
  const groups = new Map<string, Sample[]>();
  for (const s of samples) {
    const k = `${s.scenario}\u0000${s.target}`;
    groups.set(k, [...(groups.get(k) ?? []), s]);
  }
  const out: Aggregate[] = [];
  for (const group of groups.values()) {
    const first = group[0]!;
    const lat = new Histogram();
    const ttfb = new Histogram();
    const gap = new Histogram();
    let requests = 0;
    let errors = 0;
    let elapsed = 0;
    let loadgenCpu = 0;
    let simCpu = 0;
    let targetCpu = 0;
    const roleCpu: Record<string, number> = {};
    const roleSwitches: Record<string, number> = {};
    const peak: Record<string, number> = {};
    const count: Record<string, number> = {};
    let peakTotal = 0;
    let known = true;
    for (const s of group) {
      const r = s.result;
      lat.merge(r.latency);
      if (r.ttfb) ttfb.merge(r.ttfb);
      if (r.gap) gap.merge(r.gap);
      requests += r.requests;
      errors += r.errors;
      elapsed += r.elapsedMs;
      loadgenCpu += r.cpuUserMs + r.cpuSystemMs;
      simCpu += s.simulatorCpuMs;
      if (s.processes.length === 0) known = false;
      peakTotal = Math.max(peakTotal, s.peakTotalPssBytes ?? 0);
      const here: Record<string, number> = {};
      for (const p of s.processes) here[p.role] = (here[p.role] ?? 0) + 1;
      for (const [role, n] of Object.entries(here)) count[role] = Math.max(count[role] ?? 0, n);
      for (const p of s.processes) {
        targetCpu += p.cpuMs;
        roleCpu[p.role] = (roleCpu[p.role] ?? 0) + p.cpuMs;
        roleSwitches[p.role] = (roleSwitches[p.role] ?? 0) + (p.contextSwitches ?? 0);
        if (p.role === 'worker') roleCpu['worker-loop'] = (roleCpu['worker-loop'] ?? 0) + (p.mainThreadCpuMs ?? 0);
        peak[p.role] = Math.max(peak[p.role] ?? 0, p.peakRssBytes);
      }
    }
    const perK = (ms: number): number => (requests === 0 ? NaN : r2((ms / requests) * 1000));
    out.push({
      scenario: first.scenario,
      target: first.target,
      kind: kinds.get(first.target) ?? 'extra',
      concurrency: first.concurrency,
      rounds: group.length,
      requests,
      errors,
      rps: elapsed === 0 ? 0 : Math.round((requests / elapsed) * 1000),
      latency: lat.summary(),
      ttfb: first.result.ttfb ? ttfb.summary() : null,
      gap: first.result.gap ? gap.summary() : null,
      cpuMsPerK: known ? perK(targetCpu) : null,
      cpuMsPerKByRole: Object.fromEntries(Object.entries(roleCpu).map(([k, v]) => [k, perK(v)])),
      switchesPerCallByRole: Object.fromEntries(Object.entries(roleSwitches).map(([k, v]) => [k, requests === 0 ? NaN : r2(v / requests)])),
      targetCores: known && elapsed > 0 ? r2(targetCpu / elapsed) : null,
      loadCores: elapsed > 0 ? r2((loadgenCpu + simCpu + (kinds.get(first.target) === 'direct' ? targetCpu : 0)) / elapsed) : 0,
      loadgenCpuMsPerK: perK(loadgenCpu),
      peakRssByRole: peak,
      peakTotalBytes: peakTotal,
      processCount: count,
      loopDelay: loopDelayOf(group),
      addedP50: null,
      addedP99: null,
      vsBare: null,
      vsDirect: null,
    });
  }
  for (const a of out) {
    const bare = out.find((b) => b.scenario === a.scenario && b.kind === 'bare');
    const direct = out.find((b) => b.scenario === a.scenario && b.kind === 'direct');
    const ratios = (base: Aggregate): { rps: number; cpu: number | null; p50: number } => ({
      rps: r2(a.rps / base.rps),
      cpu: a.cpuMsPerK !== null && base.cpuMsPerK !== null ? r2(a.cpuMsPerK / base.cpuMsPerK) : null,
      p50: r2(a.latency.p50 / base.latency.p50),
    });
    if (bare !== undefined && a !== bare) {
      a.addedP50 = r3(a.latency.p50 - bare.latency.p50);
      a.addedP99 = r3(a.latency.p99 - bare.latency.p99);
      a.vsBare = ratios(bare);
    }
    if (direct !== undefined && a !== direct) a.vsDirect = ratios(direct);
  }
  return out;
}

/** A mixed scenario's small calls against the same calls alone (scenarios.ts `beside`), per target. */
export interface MixedCheck {
  scenario: string;
  target: string;
  beside: string;
  baseline: string;
  baselineP99: number;
  p99: number;
  /** p99 beside ÷ p99 alone, every round merged. */
  ratio: number;
  /** The same ratio round by round (each round's beside job against that round's alone job), and their median: less sensitive to one noisy round. */
  roundRatios: number[];
  medianRoundRatio: number;
  limit: number;
  pass: boolean;
  /** Background requests completed during the scenario's jobs (all rounds). */
  besideRequests: number;
}

export const MIXED_P99_LIMIT = 1.2;

export function mixedChecks(aggregates: Aggregate[], samples: Sample[], baselines: Map<string, { baseline: string; what: string }>): MixedCheck[] {
  const out: MixedCheck[] = [];
  for (const a of aggregates) {
    const b = baselines.get(a.scenario);
    if (b === undefined) continue;
    const base = aggregates.find((x) => x.scenario === b.baseline && x.target === a.target);
    if (base === undefined) continue;
    const ratio = r2(a.latency.p99 / base.latency.p99);
    const mine = samples.filter((x) => x.scenario === a.scenario && x.target === a.target);
    const besideRequests = mine.reduce((n, x) => n + (x.beside?.requests ?? 0), 0);
    const p99 = (x: Sample): number => Histogram.from(x.result.latency).percentileMs(0.99);
    const roundRatios = mine.flatMap((x) => {
      const alone = samples.find((y) => y.scenario === b.baseline && y.target === a.target && y.round === x.round);
      return alone === undefined ? [] : [r2(p99(x) / p99(alone))];
    });
    const sorted = [...roundRatios].sort((x, y) => x - y);
    const medianRoundRatio = sorted.length === 0 ? NaN : r2(sorted.length % 2 ? sorted[(sorted.length - 1) / 2]! : (sorted[sorted.length / 2 - 1]! + sorted[sorted.length / 2]!) / 2);
    out.push({ scenario: a.scenario, target: a.target, beside: b.what, baseline: b.baseline, baselineP99: base.latency.p99, p99: a.latency.p99, ratio, roundRatios, medianRoundRatio, limit: MIXED_P99_LIMIT, pass: ratio <= MIXED_P99_LIMIT, besideRequests });
  }
  return out;
}
