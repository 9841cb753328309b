// The HTML report: one self-contained page (inline CSS and SVG, no scripts)
// with the verdict first, then per scenario the figures and their charts, then
// memory, the sweep grid, the CPU profile and the raw notes.
import { limitText, scoreText, verdict } from './goals.js';
import type { Report } from './report-files.js';
import type { Aggregate } from './results.js';
import { barChart, esc, PALETTE, type Group } from './svg.js';

const MB = 1024 * 1024;

function table(head: string[], rows: Array<Array<string | number>>, cls = ''): string {
  const cell = (c: string | number): string => `<td>${typeof c === 'number' ? c.toLocaleString('en-US') : c}</td>`;
  return `<table class="${cls}"><thead><tr>${head.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead><tbody>${rows.map((r) => `<tr>${r.map(cell).join('')}</tr>`).join('')}</tbody></table>`;
}

const f3 = (x: number | null | undefined): string => (x === null || x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(3));
const ratio = (x: number | null | undefined): string => (x === null || x === undefined ? '–' : `${x.toFixed(2)}×`);

function scenarioSection(r: Report, id: string, colors: Map<string, string>): string {
  const s = r.scenarios.find((x) => x.id === id)!;
  const aggs = r.aggregates.filter((a) => a.scenario === id);
  if (aggs.length === 0) return '';
  const rows = aggs.map((a) => [
    esc(a.target),
    a.rps,
    f3(a.latency.p50),
    f3(a.latency.p90),
    f3(a.latency.p99),
    f3(a.latency.max),
    a.addedP50 === null ? '–' : f3(a.addedP50),
    a.addedP99 === null ? '–' : f3(a.addedP99),
    a.cpuMsPerK === null ? '–' : (a.cpuMsPerK / 1000).toFixed(3),
    Object.entries(a.peakRssByRole).map(([role, b]) => `${role} ${(b / MB).toFixed(0)}`).join(', ') || '–',
    a.targetCores === null ? '–' : a.targetCores.toFixed(2),
    a.loadCores.toFixed(2),
    a.loadgenCpuMsPerK.toFixed(1),
    ratio(a.vsBare?.rps),
    ratio(a.vsBare?.cpu),
    a.errors,
  ]);
  const targets = aggs.map((a) => ({ name: a.target, color: colors.get(a.target) }));
  const byTarget = (pick: (a: Aggregate) => number | null): Group[] => [{ label: '', values: aggs.map(pick) }];
  const pct = (pick: (a: Aggregate) => { p50: number; p90: number; p99: number } | null): Group[] =>
    (['p50', 'p90', 'p99'] as const).map((q) => ({ label: q, values: aggs.map((a) => pick(a)?.[q] ?? null) }));
  let charts =
    barChart({ title: 'Latency', unit: 'ms', series: targets, groups: pct((a) => a.latency) }) +
    barChart({ title: 'Throughput', unit: 'req/s', series: targets, groups: byTarget((a) => a.rps), digits: 0 }) +
    barChart({ title: 'CPU of the target per 1,000 requests', unit: 's', series: targets, groups: byTarget((a) => (a.cpuMsPerK === null ? null : a.cpuMsPerK / 1000)) });
  let streamRows = '';
  if (s.stream) {
    charts += barChart({ title: 'Time to first byte', unit: 'ms', series: targets, groups: pct((a) => a.ttfb) });
    charts += barChart({ title: 'Gap between SSE events', unit: 'ms', series: targets, groups: pct((a) => a.gap) });
    streamRows = table(
      ['target', 'TTFB p50', 'TTFB p90', 'TTFB p99', 'gap p50', 'gap p99', 'gap max', 'total p50', 'total p99'],
      aggs.map((a) => [esc(a.target), f3(a.ttfb?.p50), f3(a.ttfb?.p90), f3(a.ttfb?.p99), f3(a.gap?.p50), f3(a.gap?.p99), f3(a.gap?.max), f3(a.latency.p50), f3(a.latency.p99)]),
    );
  }
  return `<section><h3 id="${esc(id)}">${esc(id)}: ${esc(s.title)}</h3><p class="note">${esc(s.note)} Body ${s.bodyBytes.toLocaleString('en-US')} bytes; ${s.concurrency} connection(s), ${s.keepAlive ? 'keep-alive' : 'a new connection per request'}.</p>
${table(['target', 'req/s', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', '+p50 ms', '+p99 ms', 'CPU s/1k', 'peak RSS MB', 'target cores', 'load cores', 'loadgen CPU ms/1k', 'req/s vs bare', 'CPU vs bare', 'errors'], rows)}
${streamRows}<div class="charts">${charts}</div></section>`;
}

function memorySection(r: Report, colors: Map<string, string>): string {
  const aggs = r.aggregates.filter((a) => Object.keys(a.peakRssByRole).length > 0);
  if (aggs.length === 0) return '';
  const series: Array<{ name: string; color?: string; key: [string, string] }> = [];
  for (const a of aggs) for (const role of Object.keys(a.peakRssByRole)) if (!series.some((s) => s.key[0] === a.target && s.key[1] === role)) series.push({ name: `${a.target} ${role}`, key: [a.target, role] });
  series.forEach((s, i) => (s.color = s.key[1] === 'primary' ? '#bab0ac' : (colors.get(s.key[0]) ?? PALETTE[i % PALETTE.length])));
  const groups = r.scenarios.map((s) => ({
    label: s.id,
    values: series.map(({ key }) => {
      const a = aggs.find((x) => x.scenario === s.id && x.target === key[0]);
      const b = a?.peakRssByRole[key[1]];
      return b === undefined ? null : Math.round(b / MB);
    }),
  }));
  return `<section><h2>Memory</h2><p class="note">Peak resident memory sampled every 100 ms during each scenario; for several processes of one role, the largest. Tollgate's primary holds the ledger actors and starts the embedded PostgreSQL (a separate process, not counted here); its workers serve HTTP. The <code>tokenizer</code> scenario shows a worker with its token-counting thread busy.</p>${barChart({ title: 'Peak RSS by process role', unit: 'MB', series, groups, digits: 0 })}</section>`;
}

function sweepSection(r: Report): string {
  const sw = r.sweep;
  if (sw === undefined) return '';
  const labels = ['bare', ...sw.settings.map((s) => s.label)];
  const series = labels.map((l, i) => ({ name: l, color: l === 'bare' ? '#bab0ac' : PALETTE[i % PALETTE.length] }));
  const groups = (pick: (a: Aggregate) => number): Group[] => sw.cells.map((c) => ({ label: `${c.scenario} @${c.concurrency}`, values: labels.map((l) => (c.results[l] ? pick(c.results[l]!) : null)) }));
  const rows = sw.cells.map((c) => [
    esc(c.scenario),
    c.concurrency,
    ...labels.map((l) => {
      const a = c.results[l];
      return a === undefined ? '–' : `${l === c.best ? '<b>' : ''}${a.rps.toLocaleString('en-US')} / ${f3(a.latency.p99)}${l === c.best ? '</b>' : ''}`;
    }),
  ]);
  const mem = Object.entries(sw.peakRss).map(([l, roles]) => [esc(l), ...['primary', 'worker', 'proxy'].map((role) => (roles[role] ? (roles[role]! / MB).toFixed(0) : '–'))]);
  const notes = [...(sw.failed === undefined ? [] : [`The run failed part-way (${sw.failed}): the figures are what was measured until then.`]), ...Object.entries(sw.dropped).map(([l, why]) => `Dropped: ${l} answered ${why}; its figures stop at the slot before.`)];
  return `<section><h2>Sweep</h2><p class="verdict">${esc(sw.verdict.text)}</p>${notes.map((n) => `<p class="note">${esc(n)}</p>`).join('')}
<p class="note">W = WORKERS (HTTP worker processes), T = PISCINA_MAX_THREADS (worker threads per HTTP worker, used for bodies above pools.offload_body_bytes and for token counting). Cells: req/s / p99 ms; the best setting per cell in bold. Scores (geometric mean of req/s relative to each cell's best): ${esc(Object.entries(sw.verdict.scores).map(([k, v]) => `${k} ${v}`).join(', '))}.</p>
${table(['scenario', 'connections', ...labels], rows)}
<div class="charts">${barChart({ title: 'Throughput by setting', unit: 'req/s', series, groups: groups((a) => a.rps), digits: 0 })}${barChart({ title: 'p99 latency by setting', unit: 'ms', series, groups: groups((a) => a.latency.p99) })}</div>
<h3>Peak memory by setting (MB)</h3>${table(['setting', 'primary', 'largest worker', 'proxy'], mem)}</section>`;
}

function profileSection(r: Report): string {
  const p = r.profile;
  if (p === undefined) return '';
  const parts = p.parts
    .map(
      (part) =>
        `<h3>${esc(part.process)} — ${part.sampledMs} ms sampled</h3><div class="charts">${barChart({ title: 'Self time by group', unit: 'µs per request', series: [{ name: 'CPU per request answered while profiled' }], groups: part.groups.map((g) => ({ label: g.name, values: [g.usPerRequest ?? null] })), digits: 1 })}</div>` +
        table(['self %', 'µs/request', 'function'], part.functions.map((f) => [f.pct, f.usPerRequest ?? '–', esc(f.name)])),
    )
    .join('');
  return `<section><h2>CPU profile (unary)</h2><p class="note">${esc(`${p.rps} req/s, ${p.cpuUsPerRequest} µs CPU per request with the profiler on (sampling every 200 µs). Self time: time in the function itself, not its callees. "native (program)" is time outside JavaScript: uWS's C++ and the system calls it makes.`)}</p>${parts}</section>`;
}

export function renderHtml(r: Report): string {
  const m = r.meta;
  const names = r.targets.map((t) => t.name);
  const colors = new Map(names.map((n, i) => [n, PALETTE[i % PALETTE.length]!]));
  const mark = (pass: boolean | null): string => (pass === null ? 'stated' : pass ? '<span class="ok">pass</span>' : '<span class="miss">MISS</span>');
  const checks = r.goals.length
    ? table(
        ['id', 'target', 'what', 'measured', 'reference', 'ratio', 'score', 'limit', 'result'],
        r.goals.map((g) => [esc(g.id), esc(g.target), esc(g.what), `${g.measured} ${esc(g.unit)}`, g.reference === null ? '–' : `${g.reference} ${esc(g.unit)}`, ratio(g.ratio), esc(scoreText(g)), esc(limitText(g)), g.pass === null ? verdict(g) : mark(g.pass)]),
      )
    : '';
  const mixed = r.mixed.length
    ? `<h2>Small calls beside heavy work</h2><p class="note">The small calls' p99 beside the heavy work ÷ the same calls alone (target: ≤ ${r.mixed[0]!.limit}×), merged over rounds and round by round.</p>` +
      table(
        ['scenario', 'target', 'beside', 'p99 alone ms', 'p99 beside ms', 'ratio', 'by round', 'median', 'result', 'beside requests'],
        r.mixed.map((m) => [esc(m.scenario), esc(m.target), esc(m.beside), f3(m.baselineP99), f3(m.p99), ratio(m.ratio), m.roundRatios.map((x) => x.toFixed(2)).join(' '), ratio(m.medianRoundRatio), m.pass ? '<span class="ok">pass</span>' : '<span class="miss">MISS</span>', m.besideRequests]),
      )
    : '';
  const targets = table(['target', 'kind', 'origin', 'settings'], r.targets.map((t) => [esc(t.name), t.kind, esc(t.origin), esc(JSON.stringify(t.settings))]));
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Tollgate bench — ${esc(m.mode)} ${esc(m.startedAt)}</title>
<style>body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;padding:0 1em;color:#222}table{border-collapse:collapse;margin:.6em 0;font-size:12.5px}th,td{border:1px solid #ddd;padding:3px 7px;text-align:right}th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}.charts svg{display:block;margin:1em 0}.note{color:#555}.ok{color:#2a7d2a;font-weight:600}.miss{color:#c0392b;font-weight:600}.failed{background:#fdecea;border:1px solid #c0392b;padding:.6em}.verdict{font-weight:600}code{background:#f4f4f4;padding:0 3px}</style></head><body>
<h1>Tollgate bench — ${esc(m.mode)} mode</h1>
<p>${esc(m.startedAt)} · ${m.seconds} s · Node ${esc(m.node)} · ${esc(m.cpu)} × ${m.cpus} · ${m.memoryGb} GB · git ${esc(m.git)} · ${m.pinning ? `gateway processes on CPU ${esc(m.pinning.gateway)}, load generator and simulator on CPU ${esc(m.pinning.load)}` : 'unpinned'} · load average before ${m.loadavgBefore.map((x) => x.toFixed(2)).join(' ')}, after ${m.loadavgAfter.map((x) => x.toFixed(2)).join(' ')} · other processes took ${m.otherCores.mean} cores on average during the measurements (${m.otherCores.max} at most) · ${m.settings.rounds} round(s) of ${m.settings.slotMs} ms per target, interleaved</p>
${r.failed ? `<p class="failed"><b>The run failed:</b> ${esc(r.failed)}</p>` : ''}
${targets}${checks ? `<h2>Goals: each figure against its limit</h2>${checks}` : ''}${mixed}
${r.scenarios.length ? `<h2>Scenarios</h2><p class="note">Latency is per request, from sending it to the last byte of the answer, in ms. +p50/+p99: added over the bare proxy (the floor). CPU s/1k: CPU seconds of the target's own processes (for Tollgate the primary and every worker) per 1,000 requests. Target/load cores: CPU over wall time; load cores near 1.0 means the load generator's core, not the target, was the limit.</p>` : ''}
${r.scenarios.map((s) => scenarioSection(r, s.id, colors)).join('\n')}
${memorySection(r, colors)}${sweepSection(r)}${profileSection(r)}
${r.skipped.length ? `<h2>Not measured</h2><ul>${r.skipped.map((s) => `<li><b>${esc(s.id)}</b>: ${esc(s.reason)}</li>`).join('')}</ul>` : ''}
${r.micro ? `<h2>Micro-benchmarks</h2><pre>${esc(JSON.stringify(r.micro, null, 2))}</pre>` : ''}
<p class="note">Raw samples, with every histogram, are in the JSON file written next to this page.</p></body></html>
`;
}
