// The report as text: the tables printed at the end of a run (and pasted into
// the README's Performance section), the checks, and the sweep grid.
import { type Goal, limitText, scoreText, verdict } from './goals.js';
import type { Aggregate, MixedCheck } from './results.js';
import type { Scenario, SkippedScenario } from './scenarios.js';
import type { SweepCell, SweepSetting } from './sweep-model.js';

const MB = 1024 * 1024;

/** A Markdown table: the first `left` columns are words (left-aligned), the rest figures. */
function table(head: string[], rows: string[][], left = 2): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string => `| ${cells.map((c, i) => (i < left ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  return [line(head), `|${widths.map((w, i) => (i < left ? ':' : '-') + '-'.repeat(w) + (i < left ? '-' : ':')).join('|')}|`, ...rows.map(line)].join('\n');
}

const ms = (x: number | null | undefined): string => (x === null || x === undefined || !Number.isFinite(x) ? '–' : x < 10 ? x.toFixed(3) : x.toFixed(1));
const signed = (x: number | null): string => (x === null ? '–' : `${x >= 0 ? '+' : ''}${ms(x)}`);
const ratio = (x: number | null | undefined): string => (x === null || x === undefined || !Number.isFinite(x) ? '–' : `${x.toFixed(2)}×`);
const mb = (b: number | undefined): string => (b === undefined || b === 0 ? '–' : (b / MB).toFixed(0));
const int = (x: number): string => Math.round(x).toLocaleString('en-US');

/** The memory column: the largest process per role (a gateway's worker and its primary apart). */
function memory(a: Aggregate): string {
  const roles = Object.entries(a.peakRssByRole);
  if (roles.length === 0) return '–';
  if (roles.length === 1) return mb(roles[0]![1]);
  return roles.map(([role, b]) => `${role[0]}${mb(b)}`).join(' ');
}

export function unaryTable(aggs: Aggregate[], scenarios: Scenario[]): string {
  const rows: string[][] = [];
  for (const s of scenarios) {
    for (const a of aggs.filter((x) => x.scenario === s.id)) {
      rows.push([
        s.id,
        a.target,
        int(a.rps),
        ms(a.latency.p50),
        ms(a.latency.p90),
        ms(a.latency.p99),
        ms(a.latency.max),
        signed(a.addedP50),
        signed(a.addedP99),
        a.cpuMsPerK === null ? '–' : (a.cpuMsPerK / 1000).toFixed(3),
        memory(a),
        a.targetCores === null ? '–' : a.targetCores.toFixed(2),
        a.loadCores.toFixed(2),
        String(a.errors),
      ]);
    }
  }
  return table(['scenario', 'target', 'req/s', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', '+p50', '+p99', 'CPU s/1k', 'peak RSS MB', 'tgt cores', 'load cores', 'err'], rows);
}

export function streamTable(aggs: Aggregate[], scenarios: Scenario[]): string {
  const rows: string[][] = [];
  for (const s of scenarios.filter((x) => x.stream)) {
    const bare = aggs.find((x) => x.scenario === s.id && x.kind === 'bare');
    for (const a of aggs.filter((x) => x.scenario === s.id)) {
      const addTtfb = bare?.ttfb && a.ttfb && a !== bare ? a.ttfb.p50 - bare.ttfb.p50 : null;
      const totalPct = bare && a !== bare ? `${(((a.latency.p50 - bare.latency.p50) / bare.latency.p50) * 100).toFixed(1)}%` : '–';
      rows.push([s.id, a.target, ms(a.ttfb?.p50), ms(a.ttfb?.p99), signed(addTtfb), ms(a.gap?.p50), ms(a.gap?.p99), ms(a.gap?.max), ms(a.latency.p50), ms(a.latency.p99), totalPct]);
    }
  }
  return table(['scenario', 'target', 'TTFB p50', 'TTFB p99', '+TTFB p50', 'gap p50', 'gap p99', 'gap max', 'total p50', 'total p99', 'total vs bare'], rows);
}

export function ratioTable(aggs: Aggregate[], scenarios: Scenario[]): string {
  const rows: string[][] = [];
  for (const s of scenarios) {
    for (const a of aggs.filter((x) => x.scenario === s.id && (x.kind === 'tollgate' || x.kind === 'extra') && x.vsBare !== null)) {
      rows.push([s.id, `${a.target} / bare`, ratio(a.vsBare?.rps), ratio(a.vsBare?.cpu), ratio(a.vsBare?.p50)]);
    }
    const bare = aggs.find((x) => x.scenario === s.id && x.kind === 'bare');
    if (bare?.vsDirect) rows.push([s.id, 'bare / direct', ratio(bare.vsDirect.rps), ratio(bare.vsDirect.cpu), ratio(bare.vsDirect.p50)]);
  }
  return table(['scenario', 'ratio', 'req/s', 'CPU/req', 'p50'], rows);
}

/** Issue 14's targets: Tollgate's figure, the reference's, their ratio, what is compared with the limit, pass or miss. */
export function goalsTable(list: Goal[]): string {
  const fig = (x: number | null, unit: string): string => (x === null ? '–' : `${unit === 'calls/s' ? int(x) : x < 10 ? x.toFixed(3) : x.toFixed(1)} ${unit}`);
  return table(
    ['id', 'target', 'what', 'measured', 'reference', 'ratio', 'score', 'limit', 'result'],
    list.map((g) => [g.id, g.target, g.what, fig(g.measured, g.unit), fig(g.reference, g.unit), ratio(g.ratio), scoreText(g), limitText(g), verdict(g)]),
    3,
  );
}

export function mixedTable(list: MixedCheck[]): string {
  return table(
    ['scenario', 'target', 'beside', 'small calls p99 alone', 'p99 beside', 'ratio', 'by round (median)', 'limit', 'result', 'beside requests'],
    list.map((c) => [
      c.scenario,
      c.target,
      c.beside,
      `${ms(c.baselineP99)} ms`,
      `${ms(c.p99)} ms`,
      `${c.ratio.toFixed(2)}×`,
      `${c.roundRatios.map((x) => x.toFixed(2)).join(' ')} (${ratio(c.medianRoundRatio)})`,
      `${c.limit.toFixed(2)}×`,
      c.pass ? 'met' : 'MISSED',
      String(c.besideRequests),
    ]),
    3,
  );
}

/** CPU per request by process role, µs: where a target's CPU went (the workers' event loops apart from their threads); and the context switches per request of the primary and the workers. */
export function roleTable(aggs: Aggregate[]): string {
  const us = (x: number | undefined): string => (x === undefined || !Number.isFinite(x) ? '–' : int(x));
  const rows = aggs
    .filter((a) => a.kind === 'tollgate' && a.cpuMsPerK !== null)
    .map((a) => {
      const r = a.cpuMsPerKByRole;
      const threads = r.worker === undefined || r['worker-loop'] === undefined ? undefined : r.worker - r['worker-loop'];
      const s = a.switchesPerCallByRole;
      const sw = (x: number | undefined): string => (x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(2));
      return [a.scenario, a.target, us(a.cpuMsPerK ?? undefined), us(r.primary), us(r.db), us(r.worker), us(r['worker-loop']), us(threads), `${sw(s.primary)} / ${sw(s.worker)}`];
    });
  return table(['scenario', 'target', 'all', 'primary', 'db', 'workers', 'of which event loops', 'of which other threads (pool, libuv)', 'switches per call (primary / workers)'], rows);
}

/** The HTTP workers' event loop in each scenario (bench/event-loop.ts): its longest single task and its p99 delay while the scenario ran (issue 33: the longest task ≤ 2 ms beside 128 × 3072 float embeddings). */
export function loopTable(aggs: Aggregate[]): string {
  const ms = (x: number): string => x.toFixed(1);
  const rows = aggs.filter((a) => a.loopDelay != null).map((a) => [a.scenario, a.target, ms(a.loopDelay!.maxMs), ms(a.loopDelay!.p99Ms), a.loopDelay!.byRoundMaxMs.map(ms).join(' ')]);
  return table(['scenario', 'target', 'longest delay ≈ longest task (ms)', 'p99 delay (ms)', 'longest delay by round (ms)'], rows);
}

export function skippedText(skipped: readonly SkippedScenario[]): string {
  return skipped.map((s) => `- ${s.id}: ${s.reason}`).join('\n');
}

export function sweepTable(cells: SweepCell[], settings: SweepSetting[]): string {
  const rows = cells.map((c) => [
    c.scenario,
    String(c.concurrency),
    ...settings.map((s) => {
      const a = c.results[s.label];
      return a === undefined ? '–' : `${int(a.rps)} / ${ms(a.latency.p99)}`;
    }),
  ]);
  return table(['scenario', 'conns', ...settings.map((s) => `${s.label} req/s / p99 ms`)], rows);
}

/** Per cell and setting: CPU µs per call, all processes (primary / workers), and the cores busy. */
export function sweepCpuTable(cells: SweepCell[], settings: SweepSetting[]): string {
  const us = (x: number | undefined): string => (x === undefined || !Number.isFinite(x) ? '–' : Math.round(x).toString());
  const rows = cells.map((c) => [
    c.scenario,
    String(c.concurrency),
    ...settings.map((s) => {
      const a = c.results[s.label];
      if (a === undefined || a.cpuMsPerK === null) return '–';
      const r = a.cpuMsPerKByRole;
      const parts = r.primary === undefined ? '' : ` (p ${us(r.primary)} w ${us(r.worker)})`;
      return `${us(a.cpuMsPerK)}${parts} ${a.targetCores?.toFixed(1) ?? '–'}c`;
    }),
  ]);
  return table(['scenario', 'conns', ...settings.map((s) => `${s.label} µs/call (p, w) cores`)], rows);
}
