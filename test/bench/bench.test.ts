// The bench runner end to end, briefly: the simulator, the bare proxy and the
// load generator in their own processes for ~2 s of load, then the report
// files. Checks shapes and sanity, never timings (the machine is shared).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { packageRoot } from '../../src/config/paths.js';

const RUN = join(packageRoot, 'dist/bench/run.js');

function bench(args: string[]): { code: number | null; stderr: string; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-test-'));
  const r = spawnSync(process.execPath, [RUN, '--no-pin', '--rounds', '1', '--slot-ms', '500', '--warmup-ms', '100', '--warm-target-ms', '200', '--out', dir, ...args], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: r.status, stderr: r.stderr, dir };
}

function report0(dir: string): any {
  const json = readdirSync(dir).find((f) => f.endsWith('.json'))!;
  return JSON.parse(readFileSync(join(dir, json), 'utf8'));
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

t.test('direct and bare proxy: unary and streaming, report files with sane figures', async (t) => {
  const from = 21_000 + 100 * Math.floor(Math.random() * 80);
  const { code, stderr, dir } = bench(['--targets', 'direct,bare', '--scenarios', 'unary,stream', '--ports', `${from}-${from + 99}`]);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  t.equal(code, 0, stderr.slice(-2000));
  t.match(stderr, /\| unary +\| bare +\|/, 'the table is printed');
  t.notMatch(stderr, /Not measured/, 'no empty section');
  t.same(report0(dir).mixed, [], 'no mixed scenario in this run');
  const files = readdirSync(dir);
  const json = files.find((f) => /^bench-quick-.*\.json$/.test(f));
  const html = files.find((f) => /^bench-quick-.*\.html$/.test(f));
  t.ok(json && html, `JSON and HTML written: ${files.join(', ')}`);
  const report = JSON.parse(readFileSync(join(dir, json!), 'utf8'));
  t.equal(report.failed, undefined);
  t.equal(report.meta.mode, 'quick');
  t.same(report.targets.map((x: any) => x.kind), ['direct', 'bare']);
  for (const target of report.targets) {
    const port = Number(new URL(target.origin).port);
    t.ok(port >= from && port <= from + 99, `issue 34 item 10: ${target.name} listens on ${port}, inside --ports`);
  }
  t.equal(report.samples.length, 4, 'one sample per scenario and target (one round)');
  t.equal(report.aggregates.length, 4);
  for (const a of report.aggregates) {
    const name = `${a.scenario}/${a.target}`;
    t.ok(a.requests > 0 && a.rps > 0, `${name}: requests were made`);
    t.equal(a.errors, 0, `${name}: no errors`);
    t.ok(a.latency.p50 > 0 && a.latency.p50 <= a.latency.p90 && a.latency.p90 <= a.latency.p99 && a.latency.p99 <= a.latency.max, `${name}: ordered percentiles`);
    t.ok(a.cpuMsPerK > 0, `${name}: the target's CPU was measured`);
    t.ok(a.loadgenCpuMsPerK > 0, `${name}: the load generator's own CPU was measured`);
    t.ok(Object.values(a.peakRssByRole).every((b: any) => b > 10 * 2 ** 20), `${name}: resident memory sampled`);
    if (a.scenario === 'stream') {
      t.ok(a.ttfb.p50 > 0 && a.ttfb.p50 <= a.latency.p50, `${name}: time to first byte within the total`);
      t.ok(a.gap.count > 0, `${name}: gaps between events recorded`);
    }
  }
  const bare = report.aggregates.find((a: any) => a.scenario === 'unary' && a.kind === 'bare');
  t.ok(bare.vsDirect.rps > 0, 'bare / direct ratio present');
  const page = readFileSync(join(dir, html!), 'utf8');
  t.match(page, /<svg /, 'charts are inline SVG');
  t.notMatch(page, /<script|<link |src="http|href="http/, 'no scripts, no external assets');
  for (const s of report.samples) for (const p of s.processes) t.notOk(alive(p.pid), `${p.role} ${p.pid} was stopped`);
});

t.test('Tollgate beside the bare proxy: the goals under stable ids; mixed scenarios against the same calls alone', async (t) => {
  const { code, stderr, dir } = bench(['--targets', 'bare,tollgate', '--scenarios', 'unary,small-paced,beside-count-tokens']);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  t.equal(code, 0, stderr.slice(-2000));
  t.match(stderr, /Small calls beside heavy work/, 'the comparison is printed');
  t.match(stderr, /Goals: each figure against its limit/, 'the goals are printed, named by what they measure');
  t.notMatch(stderr, /issue \d/i, 'no reference the reader cannot look up');
  t.match(stderr, /\| unary_cpu_vs_bare +\| tollgate +\|.*× +\| +≤ 2\.50× +\| +(pass|MISS) +\|/, 'as a ratio with pass or miss');
  const report = report0(dir);
  const ids = report.goals.map((g: any) => g.id);
  for (const id of ['unary_cpu_vs_bare', 'unary_cpu_all_vs_bare', 'unary_throughput_vs_bare', 'unary_p99_vs_bare', 'primary_cpu_share', 'primary_cpu_per_call', 'projection_16_cores', 'worker_rss', 'gateway_rss_one_worker']) {
    t.ok(ids.includes(id), `goal ${id} in the JSON report`);
  }
  // The ceiling is stated only when the primary's CPU was measurable at all (a short run may see none: every call stays in its worker).
  const primaryShare = report.goals.find((g: any) => g.id === 'primary_cpu_share');
  t.equal(ids.includes('cluster_ceiling'), primaryShare.measured > 0, 'cluster_ceiling stated exactly when the primary used CPU');
  for (const g of report.goals) {
    t.match(g, { id: String, target: 'tollgate', what: String, measured: Number, unit: String, score: Number, scoreUnit: String, atMost: Boolean }, `${g.id}: shape`);
    t.ok(g.pass === null || typeof g.pass === 'boolean', `${g.id}: pass is a boolean (or null for a stated figure)`);
    t.ok(Number.isFinite(g.score), `${g.id}: a finite score`);
  }
  t.equal(report.mixed.length, 1);
  const m = report.mixed[0];
  t.match(m, { scenario: 'beside-count-tokens', target: 'tollgate', baseline: 'small-paced', beside: 'count_tokens 1 MB', limit: 1.2 });
  t.ok(m.baselineP99 > 0 && m.p99 > 0 && m.ratio > 0, 'both p99s and their ratio');
  t.equal(typeof m.pass, 'boolean');
  t.ok(m.besideRequests > 0, 'the background workload ran');
  const sample = report.samples.find((x: any) => x.scenario === 'beside-count-tokens');
  t.equal(sample.beside.errors, 0, 'the background workload answered without errors');
  t.match(report.scenarios.find((x: any) => x.id === 'beside-count-tokens').beside.body, /^\(\d+ bytes\)$/, 'the background body is not copied into the report');
  // The workers' event loop, read from the target's /metrics around every job, for every scenario; none for the bare proxy.
  t.match(stderr, /The HTTP workers' event loop while each scenario ran/, 'the event-loop table is printed');
  for (const a of report.aggregates) {
    if (a.kind !== 'tollgate') t.equal(a.loopDelay ?? null, null, `${a.scenario} ${a.target}: no event loop of its own to report`);
    else t.ok(a.loopDelay.maxMs >= a.loopDelay.p99Ms && a.loopDelay.p99Ms >= 0 && a.loopDelay.byRoundMaxMs.length === a.rounds, `${a.scenario}: the longest delay, the p99, each round's`);
  }
});

t.test('a load one process cannot send: the raw client, two load generators, two simulators on one port', async (t) => {
  const { code, stderr, dir } = bench(['--targets', 'direct,bare', '--scenarios', 'unary,stream', '--client', 'raw', '--load-procs', '2', '--sim-procs', '2']);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  t.equal(code, 0, stderr.slice(-2000));
  const report = report0(dir);
  t.equal(report.samples.length, 4);
  for (const s of report.samples) {
    t.ok(s.result.requests > 0 && s.result.errors === 0, `${s.scenario}/${s.target}: answered, no errors`);
    // The two load processes' histograms were merged: as many latencies as calls.
    t.equal(s.result.latency.count, s.result.requests, `${s.scenario}/${s.target}: one latency per call`);
    if (s.scenario === 'stream') t.ok(s.result.events > 0 && s.result.ttfb.count === s.result.requests, 'streams stay on undici: events and first bytes recorded');
  }
  const direct = report.samples.find((s: any) => s.target === 'direct' && s.scenario === 'unary');
  const sims = direct.processes.filter((p: any) => p.role === 'simulator');
  t.equal(sims.length, 2, 'two simulator processes');
  // 32 connections hashed over two listeners on one port: each gets some (the chance that one gets none is 2^-31).
  t.ok(sims.every((p: any) => p.cpuMs > 0), `both simulators answered (${sims.map((p: any) => p.cpuMs).join(', ')} ms of CPU)`);
});

t.test('an erroring target fails the run loudly, with a partial report', async (t) => {
  // Nothing listens on port 9 (discard) on loopback: every request is a transport error.
  const { code, stderr, dir } = bench(['--targets', 'bare', '--scenarios', 'unary', '--target', 'nothing=http://127.0.0.1:9']);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  t.equal(code, 1);
  t.match(stderr, /BENCH FAILED: nothing answered \d+ error/);
  const json = readdirSync(dir).find((f) => f.endsWith('.json'));
  t.ok(json !== undefined && existsSync(join(dir, json)));
  t.match(JSON.parse(readFileSync(join(dir, json!), 'utf8')).failed, /ECONNREFUSED/);
});

t.test("a sweep drops a comparison that answers errors, and keeps this build's figures", async (t) => {
  // The variant's key may hold 36 calls at once: the warm-up's 32 connections and the sweep's 4 stay under it, 256 do not.
  const args = ['--sweep', '--sweep-workers', '1', '--sweep-threads', '1', '--sweep-connections', '4,256', '--sweep-scenarios', 'unary'];
  const { code, stderr, dir } = bench([...args, '--variant', 'capped:MAX_CONCURRENT_PER_KEY=36']);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  t.equal(code, 0, stderr.slice(-2000));
  t.match(stderr, /capped W1 T1 answered \d+ error\(s\) in unary@256, round 1: \{"status 429":\d+\}; dropped from the rest of the sweep/);
  t.match(stderr, /Dropped: capped W1 T1 answered/, 'said again under the tables');
  const sweep = report0(dir).sweep;
  t.match(sweep.dropped, { 'capped W1 T1': /unary@256, round 1/ });
  t.equal(sweep.failed, undefined);
  const slots = (target: string): string[] => sweep.samples.filter((x: any) => x.target === target).map((x: any) => x.scenario).sort();
  t.same(slots('W1 T1'), ['unary@256', 'unary@4'], "this build's every slot");
  t.same(slots('capped W1 T1'), ['unary@4'], "the comparison's slots before it failed; not the failing one");
});

t.test('a sweep cut short keeps what it measured in the report', async (t) => {
  // SIGTERM once two slots are measured: the children stop, the slot in progress fails, the report is written.
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-test-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const args = ['--no-pin', '--rounds', '1', '--slot-ms', '500', '--warmup-ms', '100', '--warm-target-ms', '200', '--out', dir];
  const child = spawn(process.execPath, [RUN, ...args, '--sweep', '--sweep-workers', '1', '--sweep-threads', '1', '--sweep-connections', '4,8,16', '--sweep-scenarios', 'unary']);
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
    if (/\[ +2\/6\]/.test(stderr)) child.kill('SIGTERM');
  });
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  t.equal(code, 130, stderr.slice(-2000));
  t.match(stderr, /the run failed part-way/, 'the tables are printed, marked');
  const report = report0(dir);
  t.match(report.failed, /interrupted \(SIGTERM\)/);
  t.match(report.sweep, { failed: String, goals: [], dropped: {} }, 'no goals from a sweep that did not finish');
  t.ok(report.sweep.samples.length >= 2, `the slots measured before the signal are in the report (${report.sweep.samples.length})`);
  t.ok(report.sweep.samples.every((x: any) => x.result.errors === 0 && x.result.requests > 0), 'answered slots only');
});
