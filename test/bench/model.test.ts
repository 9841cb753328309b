// The bench's pure parts: the histogram's percentiles and merging, how the
// sweep picks the best setting, issue 14's goals from a run's aggregates, and
// the order in which each round measures the targets.
import t from 'tap';
import { GOAL_IDS, goals, sweepScalingGoal, workerScalingGoal } from '../../bench/goals.js';
import { Histogram } from '../../bench/histogram.js';
import { slotOrder } from '../../bench/jobs.js';
import type { Aggregate } from '../../bench/results.js';
import { chooseBest, sweepCells } from '../../bench/sweep-model.js';

t.test('histogram: percentiles within 0.4%, exact max, merge and JSON round trip', async (t) => {
  const h = new Histogram();
  for (let us = 1; us <= 10_000; us++) h.record(us * 1000); // 1 µs … 10 ms, uniform
  const near = (got: number, want: number): boolean => Math.abs(got - want) / want <= 0.004;
  t.ok(near(h.percentileMs(0.5), 5), `p50 ${h.percentileMs(0.5)}`);
  t.ok(near(h.percentileMs(0.99), 9.9), `p99 ${h.percentileMs(0.99)}`);
  t.equal(h.percentileMs(1), 10, 'max is exact');
  t.ok(near(h.meanMs(), 5.0005), 'mean is exact up to float error');
  const small = new Histogram();
  small.record(50);
  t.equal(small.percentileMs(0.5), 50 / 1e6, 'values below 128 ns are exact');
  const a = Histogram.from(JSON.parse(JSON.stringify(h.toJSON())));
  a.merge(h);
  t.equal(a.count, 20_000);
  t.ok(near(a.percentileMs(0.5), 5), 'merging two equal histograms keeps the percentiles');
  t.ok(Number.isNaN(new Histogram().percentileMs(0.5)), 'empty: NaN, not 0');
});

function agg(scenario: string, target: string, rps: number, p99: number): Aggregate {
  return { scenario, target, rps, latency: { count: 1, mean: p99, p50: p99, p90: p99, p99, max: p99 } } as Aggregate;
}

t.test('sweep: the best setting has the highest geometric mean of relative throughput; near-ties go to fewer processes', async (t) => {
  const settings = [
    { label: 'W1 T1', workers: 1, threads: 1 },
    { label: 'W2 T1', workers: 2, threads: 1 },
    { label: 'W2 T2', workers: 2, threads: 2 },
  ];
  const aggs = [
    agg('unary@32', 'W1 T1', 1000, 5), agg('unary@32', 'W2 T1', 1500, 4), agg('unary@32', 'W2 T2', 1490, 4),
    agg('stream@32', 'W1 T1', 100, 9), agg('stream@32', 'W2 T1', 120, 8), agg('stream@32', 'W2 T2', 121, 8),
  ];
  const cells = sweepCells(aggs, settings.map((s) => s.label));
  t.equal(cells.length, 2);
  t.same(cells.map((c) => [c.scenario, c.concurrency]), [['stream', 32], ['unary', 32]]);
  const verdict = chooseBest(cells, settings);
  t.equal(verdict.best.label, 'W2 T1', 'W2 T2 is within 2% but uses more threads');
  t.match(verdict.text, /WORKERS=2 PISCINA_MAX_THREADS=1/);
});

function full(scenario: string, target: string, kind: Aggregate['kind'], over: Partial<Aggregate>): Aggregate {
  const lat = { count: 1, mean: 1, p50: 1, p90: 1, p99: 2, max: 3 };
  return {
    scenario, target, kind, concurrency: 32, rounds: 1, requests: 1000, errors: 0, rps: 1000, latency: lat, ttfb: null, gap: null,
    cpuMsPerK: 100, cpuMsPerKByRole: {}, switchesPerCallByRole: {}, targetCores: 1, loadCores: 0.5, loadgenCpuMsPerK: 10, peakRssByRole: {}, peakTotalBytes: 0,
    processCount: {}, addedP50: null, addedP99: null, vsBare: null, vsDirect: null, ...over,
  };
}

t.test('goals: every issue-14 target under its stable id, a ratio and pass/miss, from one run\'s aggregates', async (t) => {
  const MB = 2 ** 20;
  const lat = (p50: number, p99: number) => ({ count: 1, mean: p50, p50, p90: p50, p99, max: p99 });
  const g = { peakRssByRole: { primary: 100 * MB, worker: 140 * MB }, peakTotalBytes: 240 * MB, processCount: { primary: 1, worker: 1, db: 3 } };
  const aggs = [
    full('unary', 'bare', 'bare', { rps: 20_000, cpuMsPerK: 40, latency: lat(1, 4) }),
    full('unary', 'tollgate', 'tollgate', { rps: 8_000, cpuMsPerK: 120, cpuMsPerKByRole: { primary: 10, worker: 100, db: 10 }, latency: lat(3, 10), ...g }),
    full('unary-1conn', 'bare', 'bare', { latency: lat(0.2, 0.5) }),
    full('unary-1conn', 'tollgate', 'tollgate', { latency: lat(0.28, 1.2), ...g }),
    full('stream', 'bare', 'bare', { cpuMsPerK: 300, ttfb: lat(0.2, 0.4) }),
    full('stream', 'tollgate', 'tollgate', { cpuMsPerK: 500, ttfb: lat(0.6, 1), ...g }),
    full('stream-delay5', 'bare', 'bare', { latency: lat(330, 340) }),
    full('stream-delay5', 'tollgate', 'tollgate', { latency: lat(333, 341), ...g }),
    full('beside-embeddings', 'tollgate', 'tollgate', { peakRssByRole: { worker: 400 * MB }, processCount: { worker: 1 } }),
    full('embeddings', 'tollgate', 'tollgate', { peakRssByRole: { worker: 350 * MB }, peakTotalBytes: 370 * MB, processCount: { worker: 1 } }),
    full('count-tokens', 'tollgate', 'tollgate', { peakRssByRole: { worker: 300 * MB }, peakTotalBytes: 320 * MB, processCount: { worker: 1 } }),
  ];
  const list = goals(aggs);
  const byId = new Map(list.map((x) => [x.id, x]));
  for (const id of GOAL_IDS.filter((x) => x !== 'worker_cpu_vs_workers' && x !== 'redis_cpu_vs_embedded' && x !== 'sweep_scaling')) t.ok(byId.has(id), `${id} present`);
  for (const x of list) {
    t.ok(GOAL_IDS.includes(x.id), `${x.id} is a known id`);
    t.equal(x.target, 'tollgate');
    t.type(x.measured, 'number');
    t.type(x.score, 'number');
    t.ok(x.pass === null ? x.limit === null : typeof x.pass === 'boolean', `${x.id}: pass/miss or a stated figure`);
  }
  t.match(byId.get('unary_cpu_vs_bare'), { measured: 110, ratio: 2.75, score: 2.75, limit: 2.5, pass: false }, 'the gateway\'s processes, the store apart');
  t.match(byId.get('unary_cpu_all_vs_bare'), { ratio: 3, limit: null, pass: null });
  t.match(byId.get('store_cpu_per_call'), { score: 10, limit: 10, pass: true });
  t.match(byId.get('primary_cpu_per_call'), { score: 10, limit: 3, pass: false });
  t.match(byId.get('unary_throughput_vs_bare'), { score: 0.4, limit: 0.5, atMost: false, pass: false });
  t.match(byId.get('unary_1conn_p50_added'), { score: 0.08, pass: true });
  t.match(byId.get('primary_cpu_share'), { score: 8.333, limit: 5, pass: false });
  t.match(byId.get('cluster_ceiling'), { measured: 100_000, pass: null });
  // One worker: 1e6 / 100 µs = 10,000 calls/s; 16 of them 160,000, capped by the ceiling (100,000): 10×.
  t.match(byId.get('projection_16_cores'), { measured: 100_000, reference: 10_000, score: 10, limit: 12, pass: false });
  t.match(byId.get('worker_rss'), { score: 140, pass: true }, 'the mixed, embeddings and count-tokens scenarios are not chat scenarios');
  t.match(byId.get('gateway_rss_one_worker'), { score: 240, pass: true });
});

t.test('goals: a primary that used no measurable CPU sets no ceiling; the projection is 16 workers', async (t) => {
  const lat = (p50: number, p99: number) => ({ count: 1, mean: p50, p50, p90: p50, p99, max: p99 });
  const list = goals([
    full('unary', 'bare', 'bare', { rps: 20_000, cpuMsPerK: 40, latency: lat(1, 4) }),
    full('unary', 'tollgate', 'tollgate', { rps: 8_000, cpuMsPerK: 110, cpuMsPerKByRole: { primary: 0, worker: 100, db: 10 }, latency: lat(3, 10) }),
  ]);
  const byId = new Map(list.map((x) => [x.id, x]));
  t.notOk(byId.has('cluster_ceiling'), 'no ceiling stated');
  t.match(byId.get('projection_16_cores'), { score: 16, pass: true });
  t.match(byId.get('primary_cpu_per_call'), { score: 0, pass: true });
});

t.test('goals: a worker\'s CPU per call across WORKERS, from a sweep', async (t) => {
  const settings = [
    { label: 'W1 T1', workers: 1, threads: 1 },
    { label: 'W2 T1', workers: 2, threads: 1 },
    { label: 'W4 T1', workers: 4, threads: 1 },
  ];
  const aggs = [100, 110, 150].map((w, i) => full('unary@32', settings[i]!.label, 'tollgate', { cpuMsPerKByRole: { primary: 20, worker: w } }));
  t.match(workerScalingGoal(aggs, settings, 'unary@32'), { id: 'worker_cpu_vs_workers', measured: 150, reference: 100, ratio: 1.5, pass: false });
  t.equal(workerScalingGoal(aggs, settings.slice(0, 1), 'unary@32'), null, 'one WORKERS value: nothing to compare');
});

t.test('goals: calls/s rise with WORKERS and reach 8× WORKERS=1, from a sweep (issue 32)', async (t) => {
  const settings = [1, 2, 4, 8, 12].map((w) => ({ label: `W${w} T1`, workers: w, threads: 1 }));
  const sweep = (rps: number[]) => rps.map((r, i) => full('unary@512', settings[i]!.label, 'tollgate', { rps: r }));
  t.match(sweepScalingGoal(sweep([5000, 9800, 19000, 36000, 48000]), settings, 'unary@512'), { id: 'sweep_scaling', measured: 48000, reference: 5000, ratio: 9.6, pass: true });
  t.match(sweepScalingGoal(sweep([5000, 9800, 19000, 50000, 45000]), settings, 'unary@512'), { ratio: 9, pass: false }, 'W12 below W8: not rising');
  t.match(sweepScalingGoal(sweep([5566, 12013, 20974, 18112, 16714]), settings, 'unary@512'), { pass: false }, "the issue's sweep of 2026-11-26 misses");
  t.match(sweepScalingGoal(sweep([5000, 9000, 17000, 30000, 38000]), settings, 'unary@512'), { ratio: 7.6, pass: false }, 'rising, under 8×');
  t.equal(sweepScalingGoal(sweep([5000]), settings.slice(0, 1), 'unary@512'), null, 'one WORKERS value: nothing to compare');
});

t.test('slot order: over a cycle every target takes every slot and follows every other target equally often', async (t) => {
  const count = (xs: string[]): number[] => [...xs.reduce((m, x) => m.set(x, (m.get(x) ?? 0) + 1), new Map<string, number>()).values()];
  for (let n = 1; n <= 7; n++) {
    const targets = Array.from({ length: n }, (_, i) => String.fromCharCode(65 + i));
    const cycle = n % 2 === 0 || n === 1 ? n : 2 * n;
    const rows = Array.from({ length: cycle }, (_, r) => slotOrder(targets, r + 1));
    const shown = rows.map((r) => r.join('')).join(' ');
    t.ok(rows.every((row) => [...row].sort().join('') === targets.join('')), `n=${n}: each round measures every target once (${shown})`);
    for (let j = 0; j < n; j++) t.same(count(rows.map((row) => row[j]!)), Array(n).fill(cycle / n), `n=${n}: slot ${j} has every target equally often`);
    const pairs = count(rows.flatMap((row) => row.slice(1).map((x, j) => `${row[j]}${x}`)));
    t.same(pairs, Array(n * (n - 1)).fill(cycle / n), `n=${n}: every ordered pair of neighbours occurs, equally often`);
    t.same(slotOrder(targets, cycle + 1), rows[0], `n=${n}: the cycle repeats`);
  }
  t.same(slotOrder(['bare', 'tollgate', 'before'], 1), ['bare', 'tollgate', 'before'], 'the first round keeps the order given');
  t.same(slotOrder(['bare', 'tollgate'], 2), ['tollgate', 'bare'], 'two targets swap each round');
});
