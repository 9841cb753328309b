// Tollgate's performance goals (overhead, throughput, latency, memory against
// the bare proxy), each checked for every Tollgate target of a run
// against the bare proxy in the same run, printed as a ratio with pass or
// miss, and kept in the JSON report under a stable id so that runs of
// different commits can be compared id by id. Pure: aggregates in, goals out.
import type { Aggregate } from './results.js';

/** The stable names (JSON `goals[].id`): never rename one; add new ones. */
export const GOAL_IDS = [
  'unary_cpu_vs_bare',
  'stream_cpu_vs_bare',
  'unary_throughput_vs_bare',
  'unary_p99_vs_bare',
  'unary_1conn_p50_added',
  'unary_1conn_p99_added',
  'stream_ttfb_added',
  'paced_stream_total_vs_bare',
  'primary_cpu_share',
  'cluster_ceiling',
  'projection_16_cores',
  'worker_cpu_vs_workers',
  'worker_rss',
  'gateway_rss_one_worker',
  'redis_cpu_vs_embedded',
  'unary_cpu_all_vs_bare',
  'store_cpu_per_call',
  'primary_cpu_per_call',
  'sweep_scaling',
] as const;
export type GoalId = (typeof GOAL_IDS)[number];

export interface Goal {
  id: GoalId;
  target: string;
  /** The target in words, with the scenario it is read from. */
  what: string;
  /** Tollgate's figure and the reference's (bare proxy, WORKERS=1, embedded ledger), in `unit`. */
  measured: number;
  reference: number | null;
  unit: string;
  /** measured ÷ reference. */
  ratio: number | null;
  /** What is compared with the limit (a ratio, an added latency, a share, megabytes), in `scoreUnit`. */
  score: number;
  scoreUnit: '×' | 'ms' | '%' | 'MB' | 'calls/s' | 'µs';
  /** null: a figure to state, with nothing to pass (the projected ceiling). */
  limit: number | null;
  atMost: boolean;
  pass: boolean | null;
}

const MB = 1024 * 1024;
const r3 = (x: number): number => Math.round(x * 1000) / 1000;

/** The 16-core projection must reach this many times one worker's calls per second. */
export const PROJECTION_CORES = 16;
export const PROJECTION_MIN = 12;
/** A worker's CPU per call at the most WORKERS over WORKERS=1: "does not grow", with room for noise. */
export const WORKER_GROWTH_LIMIT = 1.1;
/** The ledger on Redis may cost at most this much more CPU per call than the embedded one (issue 32). */
export const REDIS_CPU_LIMIT = 1.15;
/** Issue 32: the sweep's calls/s at the most WORKERS must reach this many times WORKERS=1's, rising at each step. */
export const SWEEP_SCALING_MIN = 8;
/** Scenarios that are not chat calls: the memory goals do not read their peaks. */
const NOT_CHAT = new Set(['tokenizer', 'embeddings', 'count-tokens']);

export function goals(aggs: Aggregate[]): Goal[] {
  const out: Goal[] = [];
  const gateways = [...new Set(aggs.filter((a) => a.kind === 'tollgate').map((a) => a.target))];
  const find = (scenario: string, target: string): Aggregate | undefined => aggs.find((a) => a.scenario === scenario && a.target === target);
  const bareOf = (scenario: string): Aggregate | undefined => aggs.find((a) => a.scenario === scenario && a.kind === 'bare');
  for (const t of gateways) {
    const add = (id: GoalId, what: string, measured: number, reference: number | null, unit: string, score: number, scoreUnit: Goal['scoreUnit'], limit: number | null, atMost = true): void => {
      if (!Number.isFinite(measured) || !Number.isFinite(score) || (reference !== null && !Number.isFinite(reference))) return;
      const ratio = reference === null || reference === 0 ? null : r3(measured / reference);
      const pass = limit === null ? null : atMost ? score <= limit : score >= limit;
      out.push({ id, target: t, what, measured: r3(measured), reference: reference === null ? null : r3(reference), unit, ratio, score: r3(score), scoreUnit, limit, atMost, pass });
    };
    const pair = (scenario: string): [Aggregate, Aggregate] | null => {
      const g = find(scenario, t);
      const b = bareOf(scenario);
      return g && b ? [g, b] : null;
    };
    const unary = pair('unary');
    if (unary) {
      const [g, b] = unary;
      if (g.cpuMsPerK !== null && b.cpuMsPerK !== null) {
        // Issue 32: the gateway's own processes against the bare proxy; the store (embedded PostgreSQL) on its own line.
        const roles = g.cpuMsPerKByRole;
        const gateway = (roles.primary ?? 0) + (roles.worker ?? 0);
        if (gateway > 0) add('unary_cpu_vs_bare', 'unary @32: CPU per call, the gateway (primary + workers)', gateway, b.cpuMsPerK, 'µs', gateway / b.cpuMsPerK, '×', 2.5);
        add('unary_cpu_all_vs_bare', 'unary @32: CPU per call, all processes (the store too)', g.cpuMsPerK, b.cpuMsPerK, 'µs', g.cpuMsPerK / b.cpuMsPerK, '×', null);
        if (roles.db !== undefined) add('store_cpu_per_call', 'unary @32: the store\'s CPU per call (embedded PostgreSQL)', roles.db, null, 'µs', roles.db, 'µs', 10);
      }
      add('unary_throughput_vs_bare', 'unary @32: calls/s on one core', g.rps, b.rps, 'calls/s', g.rps / b.rps, '×', 0.5, false);
      add('unary_p99_vs_bare', 'unary @32: p99', g.latency.p99, b.latency.p99, 'ms', g.latency.p99 / b.latency.p99, '×', 2);
    }
    const stream = pair('stream');
    if (stream) {
      const [g, b] = stream;
      if (g.cpuMsPerK !== null && b.cpuMsPerK !== null) add('stream_cpu_vs_bare', 'stream (64 chunks, no delay): CPU per stream', g.cpuMsPerK, b.cpuMsPerK, 'µs', g.cpuMsPerK / b.cpuMsPerK, '×', 2);
      if (g.ttfb && b.ttfb) add('stream_ttfb_added', 'stream: time to first byte p50, added', g.ttfb.p50, b.ttfb.p50, 'ms', g.ttfb.p50 - b.ttfb.p50, 'ms', 0.3);
    }
    const one = pair('unary-1conn');
    if (one) {
      const [g, b] = one;
      add('unary_1conn_p50_added', 'unary @1: p50, added', g.latency.p50, b.latency.p50, 'ms', g.latency.p50 - b.latency.p50, 'ms', 0.1);
      add('unary_1conn_p99_added', 'unary @1: p99, added', g.latency.p99, b.latency.p99, 'ms', g.latency.p99 - b.latency.p99, 'ms', 0.5);
    }
    const paced = pair('stream-delay5');
    if (paced) add('paced_stream_total_vs_bare', 'paced stream (5 ms apart): total p50', paced[0].latency.p50, paced[1].latency.p50, 'ms', paced[0].latency.p50 / paced[1].latency.p50, '×', 1.02);

    const u = find('unary', t);
    const primary = u?.cpuMsPerKByRole.primary;
    if (u && u.cpuMsPerK !== null && primary !== undefined && u.cpuMsPerK > 0) {
      add('primary_cpu_share', 'unary @32: the primary\'s share of CPU per call', primary, u.cpuMsPerK, 'µs', (primary / u.cpuMsPerK) * 100, '%', 5);
      add('primary_cpu_per_call', 'unary @32: the primary\'s CPU per call', primary, null, 'µs', primary, 'µs', 3);
      // One worker with a core to itself: 1 s ÷ the workers' CPU per call (pool threads included: /proc counts a process's threads).
      const worker = u.cpuMsPerKByRole.worker ?? 0;
      if (worker > 0) {
        // A primary that used no CPU the clock could see (10 ms ticks) over the scenario sets no ceiling: it is stated only when measured.
        const ceiling = primary > 0 ? 1e6 / primary : Infinity;
        const one = 1e6 / worker;
        if (Number.isFinite(ceiling)) add('cluster_ceiling', 'projected cluster ceiling: 1 s ÷ the primary\'s µs per call', ceiling, null, 'calls/s', ceiling, 'calls/s', null);
        const projection = Math.min(PROJECTION_CORES * one, ceiling);
        add('projection_16_cores', `${PROJECTION_CORES}-core projection: min(${PROJECTION_CORES} × one worker's calls/s, the ceiling) over one worker's`, projection, one, 'calls/s', projection / one, '×', PROJECTION_MIN, false);
      }
    }

    // Memory: the peaks over the chat scenarios (the tokenizer, embeddings, count-tokens and mixed scenarios load the pool on purpose).
    const chat = aggs.filter((a) => a.target === t && !NOT_CHAT.has(a.scenario) && !a.scenario.startsWith('beside-') && !a.scenario.startsWith('mixed-'));
    const workerPeak = Math.max(0, ...chat.map((a) => a.peakRssByRole.worker ?? 0));
    if (workerPeak > 0) add('worker_rss', 'chat scenarios: peak RSS of an HTTP worker', workerPeak / MB, null, 'MB', workerPeak / MB, 'MB', 150);
    const oneWorker = chat.every((a) => (a.processCount.worker ?? 0) <= 1);
    const totalPeak = Math.max(0, ...chat.map((a) => a.peakTotalBytes ?? 0));
    if (oneWorker && totalPeak > 0) add('gateway_rss_one_worker', 'chat scenarios: all processes together, one worker (PSS)', totalPeak / MB, null, 'MB', totalPeak / MB, 'MB', 250);
  }

  // The ledger on Redis against the embedded one, when the run had both.
  const ext = aggs.find((a) => a.scenario === 'unary' && a.target === 'tollgate-ext');
  const emb = aggs.find((a) => a.scenario === 'unary' && a.target === 'tollgate');
  if (ext?.cpuMsPerK && emb?.cpuMsPerK) {
    const ratio = ext.cpuMsPerK / emb.cpuMsPerK;
    out.push({ id: 'redis_cpu_vs_embedded', target: 'tollgate-ext', what: 'unary @32: CPU per call, ledger on Redis, over the embedded', measured: r3(ext.cpuMsPerK), reference: r3(emb.cpuMsPerK), unit: 'µs', ratio: r3(ratio), score: r3(ratio), scoreUnit: '×', limit: REDIS_CPU_LIMIT, atMost: true, pass: ratio <= REDIS_CPU_LIMIT });
  }
  return out;
}

/**
 * From a sweep: an HTTP worker's CPU per unary call (the workers' CPU over
 * calls, divided by how many workers shared them) at the most WORKERS
 * against WORKERS=1, the same pool size and connections.
 */
export function workerScalingGoal(aggs: Aggregate[], settings: Array<{ label: string; workers: number; threads: number }>, scenario: string): Goal | null {
  // Calls are spread over the workers, so what one call costs a worker is the workers' CPU over all calls.
  const perWorker = (label: string): number | null => aggs.find((x) => x.scenario === scenario && x.target === label)?.cpuMsPerKByRole.worker ?? null;
  const threads = Math.min(...settings.map((s) => s.threads));
  const same = settings.filter((s) => s.threads === threads).sort((a, b) => a.workers - b.workers);
  const lo = same[0];
  const hi = same[same.length - 1];
  if (lo === undefined || hi === undefined || lo.workers === hi.workers || lo.workers !== 1) return null;
  const a = perWorker(lo.label);
  const b = perWorker(hi.label);
  if (a === null || b === null || a <= 0) return null;
  const ratio = b / a;
  return {
    id: 'worker_cpu_vs_workers',
    target: `${hi.label} / ${lo.label}`,
    what: `${scenario}: workers' CPU per call at WORKERS=${hi.workers} over WORKERS=1`,
    measured: r3(b),
    reference: r3(a),
    unit: 'µs',
    ratio: r3(ratio),
    score: r3(ratio),
    scoreUnit: '×',
    limit: WORKER_GROWTH_LIMIT,
    atMost: true,
    pass: ratio <= WORKER_GROWTH_LIMIT,
  };
}

/**
 * From a sweep (issue 32): calls/s at the most WORKERS over WORKERS=1, the
 * same pool size and connections; it passes when that reaches
 * SWEEP_SCALING_MIN and every step of WORKERS served more calls than the one
 * before it (an operator who adds workers never gets fewer calls).
 */
export function sweepScalingGoal(aggs: Aggregate[], settings: Array<{ label: string; workers: number; threads: number }>, scenario: string): Goal | null {
  const threads = Math.min(...settings.map((s) => s.threads));
  const steps = settings.filter((s) => s.threads === threads).sort((a, b) => a.workers - b.workers);
  const rps = steps.map((s) => aggs.find((x) => x.scenario === scenario && x.target === s.label)?.rps ?? null);
  const lo = steps[0];
  const hi = steps[steps.length - 1];
  if (lo === undefined || hi === undefined || lo.workers !== 1 || lo.workers === hi.workers || rps.some((x) => x === null || x <= 0)) return null;
  const ratio = rps[rps.length - 1]! / rps[0]!;
  const rising = rps.every((x, i) => i === 0 || x! > rps[i - 1]!);
  return {
    id: 'sweep_scaling',
    target: `${hi.label} / ${lo.label}`,
    what: `${scenario}: calls/s at WORKERS=${hi.workers} over WORKERS=1 (${steps.map((s, i) => `W${s.workers} ${Math.round(rps[i]!)}`).join(', ')}; ${rising ? 'rising at every step' : 'NOT rising at every step'})`,
    measured: Math.round(rps[rps.length - 1]!),
    reference: Math.round(rps[0]!),
    unit: 'calls/s',
    ratio: r3(ratio),
    score: r3(ratio),
    scoreUnit: '×',
    limit: SWEEP_SCALING_MIN,
    atMost: false,
    pass: rising && ratio >= SWEEP_SCALING_MIN,
  };
}

export function verdict(g: Goal): string {
  if (g.pass === null) return 'stated';
  return g.pass ? 'pass' : 'MISS';
}

export function scoreText(g: Goal, x: number | null = g.score): string {
  if (x === null) return '–';
  switch (g.scoreUnit) {
    case '×':
      return `${x.toFixed(2)}×`;
    case 'ms':
      return `${x >= 0 ? '+' : ''}${x.toFixed(3)} ms`;
    case '%':
      return `${x.toFixed(1)}%`;
    case 'MB':
      return `${x.toFixed(0)} MB`;
    case 'µs':
      return `${x.toFixed(1)} µs`;
    case 'calls/s':
      return `${Math.round(x).toLocaleString('en-US')} calls/s`;
  }
}

export function limitText(g: Goal): string {
  return g.limit === null ? '–' : `${g.atMost ? '≤' : '≥'} ${scoreText(g, g.limit)}`;
}
