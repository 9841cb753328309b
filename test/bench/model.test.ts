// The bench's pure parts: the histogram's percentiles and merging, and how the
// sweep picks the best setting.
import t from 'tap';
import { Histogram } from '../../bench/histogram.js';
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
