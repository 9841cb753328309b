// `npm run bench`: starts everything on loopback (the simulator in its own
// process, the bare proxy, Tollgate on the embedded default, optionally one on
// DATABASE_URL/REDIS_URL, and any --target), runs the scenarios with the
// targets interleaved in an order that changes each round (jobs.ts slotOrder)
// so a noisy machine hurts all of them alike, prints the tables, writes
// bench/results/bench-<mode>-<time>.{json,html} and stops everything it
// started — also on Ctrl-C and on errors.
//
// Layout on a 2-core machine (issue 7): gateway processes (Tollgate, the bare
// proxy) pinned to core 0; the load generator, the simulator and this runner
// on core 1. `--no-pin` runs unpinned.
import { cpus, loadavg } from 'node:os';
import type { Options } from './cli.js';
import { parseOptions, USAGE } from './cli.js';
import { runScenarios } from './jobs.js';
import { LoadGen, type MeasureContext } from './measure.js';
import { runMicro } from './micro.js';
import { installCleanup, interrupted, pinningAvailable, pinSelf, stopAll, usePortRange } from './procs.js';
import { runProfile } from './profile.js';
import { buildMeta, type Report, writeReports } from './report-files.js';
import { goals } from './goals.js';
import { goalsTable, loopTable, mixedTable, ratioTable, roleTable, skippedText, streamTable, unaryTable } from './report-text.js';
import { aggregate, mixedChecks } from './results.js';
import { SKIPPED, scenarioById } from './scenarios.js';
import { runSweep } from './sweep.js';
import { directTarget, extraTarget, startBare, startSimulator, startTollgate, type Target, type TargetKind } from './targets.js';

const log = (s: string): void => void process.stderr.write(`${s}\n`);

async function main(): Promise<number> {
  let opts: Options | null;
  try {
    opts = parseOptions(process.argv.slice(2));
  } catch (err) {
    log(`${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (opts === null) {
    log(USAGE);
    return 0;
  }
  const o = opts;
  if (o.ports !== null) usePortRange(o.ports.from, o.ports.to);
  installCleanup(log);
  const pin = o.pin && pinningAvailable();
  if (o.pin && !pin) log('note: taskset or a second CPU is missing; running unpinned (numbers are less comparable)');
  if (pin) pinSelf(o.loadCpus);
  const gwCpus = pin ? o.gatewayCpus : null;
  const loadCpus = pin ? o.loadCpus : null;
  const started = Date.now();
  const report: Report = { meta: buildMeta(o, pin), targets: [], scenarios: [], skipped: [...SKIPPED], samples: [], aggregates: [], goals: [], mixed: [] };
  log(`tollgate bench, ${o.mode} mode; load average ${loadavg().map((x) => x.toFixed(2)).join(' ')} on ${cpus().length} CPUs`);
  if (loadavg()[0]! > 0.5) log('note: the machine is busy (1-minute load > 0.5): numbers will be noisy; prefer a quiet machine for figures you publish');

  // The bench's key may have as many calls in progress as the largest scenario makes (with its heavy calls beside).
  const keyConcurrency = Math.max(...o.scenarios.map((id) => { const s = scenarioById(id); return s.concurrency + (s.beside?.concurrency ?? 0); }), ...o.sweep.connections);
  const sim = await startSimulator(loadCpus, o.simProcs);
  const targets: Target[] = [];
  try {
    if (o.builtins.has('direct')) targets.push(directTarget(sim));
    const bare = o.builtins.has('bare') || o.mode === 'sweep' ? await startBare(sim.url, gwCpus) : null;
    if (bare !== null) targets.push(bare);
    if (o.builtins.has('tollgate') && o.mode !== 'sweep') {
      log(`starting Tollgate (WORKERS=${o.workers}, PISCINA_MAX_THREADS=${o.threads}, embedded store)…`);
      targets.push(await startTollgate({ name: 'tollgate', cpus: gwCpus, simUrl: sim.url, workers: o.workers, piscinaMaxThreads: o.threads, keyConcurrency }));
    }
    for (const v of o.mode === 'sweep' ? [] : o.variants) {
      log(`starting Tollgate ${v.name} (${v.root ?? 'this build'}${Object.keys(v.env).length ? `, ${Object.entries(v.env).map(([k, x]) => `${k}=${x}`).join(' ')}` : ''})…`);
      targets.push(await startTollgate({ name: v.name, cpus: gwCpus, simUrl: sim.url, workers: o.workers, piscinaMaxThreads: o.threads, root: v.root, env: v.env, nodeArgs: v.nodeArgs, keyConcurrency }));
    }
    if ((o.databaseUrl || o.redisUrl) && o.mode !== 'sweep') {
      log('starting Tollgate on the given DATABASE_URL / REDIS_URL…');
      targets.push(
        await startTollgate({ name: 'tollgate-ext', cpus: gwCpus, simUrl: sim.url, workers: o.workers, piscinaMaxThreads: o.threads, databaseUrl: o.databaseUrl, redisUrl: o.redisUrl, keyConcurrency }),
      );
    }
    if (o.redisSentinel !== undefined && o.mode !== 'sweep') {
      log('starting Tollgate on the given DATABASE_URL with its ledger on the Sentinel deployment…');
      targets.push(
        await startTollgate({ name: 'tollgate-sentinel', cpus: gwCpus, simUrl: sim.url, workers: o.workers, piscinaMaxThreads: o.threads, databaseUrl: o.databaseUrl, redisUrl: o.redisSentinel, keyConcurrency }),
      );
    }
    if (o.redisCluster !== undefined && o.mode !== 'sweep') {
      log('starting Tollgate on the given DATABASE_URL with its ledger on the Redis Cluster…');
      targets.push(
        await startTollgate({ name: 'tollgate-cluster', cpus: gwCpus, simUrl: sim.url, workers: o.workers, piscinaMaxThreads: o.threads, databaseUrl: o.databaseUrl, redisUrl: o.redisCluster, keyConcurrency }),
      );
    }
    for (const e of o.extras) targets.push(extraTarget(e.name, e.url, e.headers, e.pids));
    report.targets = targets.map((t) => ({ name: t.name, kind: t.kind, origin: t.origin, settings: t.settings }));
    const mixed = o.mode !== 'sweep' && o.scenarios.some((id) => scenarioById(id).beside !== undefined);
    const ctx: MeasureContext = {
      loadgen: await LoadGen.start(loadCpus, o.loadProcs, o.client),
      background: mixed ? await LoadGen.start(loadCpus, o.loadProcs, o.client) : null,
      simulatorPids: sim.procs.map((p) => p.pid),
    };

    if (o.mode === 'sweep') {
      await runSweep(ctx, o, sim.url, bare!, gwCpus, report, log);
    } else {
      await runScenarios(ctx, o, targets, report);
      if (o.profile && o.profileExt) await targets.find((t) => t.name === 'tollgate-ext')?.stop(); // the profiled one takes its place in the deployment
      if (o.profile) report.profile = await runProfile(ctx, o, sim.url, gwCpus, log);
    }
    if (o.micro) report.micro = await runMicro(gwCpus, log);
  } catch (err) {
    report.failed = interrupted !== null ? `interrupted (${interrupted})` : (err as Error).message;
    if (interrupted === null) log(`\nBENCH FAILED: ${(err as Error).message}`);
  } finally {
    log('stopping everything this run started…');
    await stopAll();
  }
  report.meta.loadavgAfter = loadavg();
  const all = [...report.samples, ...(report.sweep?.samples ?? [])];
  const other = all.map((x) => x.otherCores);
  report.meta.otherCores = { mean: other.length ? Math.round((other.reduce((a, b) => a + b, 0) / other.length) * 100) / 100 : 0, max: Math.max(0, ...other) };
  report.meta.seconds = Math.round((Date.now() - started) / 1000);
  const kinds = new Map<string, TargetKind>(targets.map((t) => [t.name, t.kind]));
  report.aggregates = aggregate(report.samples, kinds);
  report.goals = goals(report.aggregates);
  if (report.sweep) report.goals.push(...report.sweep.goals);
  const besides = new Map(report.scenarios.flatMap((s) => (s.beside === undefined ? [] : [[s.id, { baseline: s.beside.baseline, what: s.beside.what }] as const])));
  report.mixed = mixedChecks(report.aggregates, report.samples, besides);
  printTables(report);
  const files = writeReports(o.out, report);
  const m = report.meta;
  log(`\nreports: ${files.json}\n         ${files.html}`);
  log(`(${m.seconds} s; load average before ${m.loadavgBefore.map((x) => x.toFixed(2)).join(' ')}, after ${m.loadavgAfter.map((x) => x.toFixed(2)).join(' ')}; other processes took ${m.otherCores.mean} cores on average during the measurements, ${m.otherCores.max} at most)`);
  if (m.otherCores.max > 0.2) log('note: other processes competed for the CPUs during this run; compare ratios rather than absolute figures, or rerun on a quiet machine');
  return interrupted !== null ? 130 : report.failed !== undefined ? 1 : 0;
}

function printTables(report: Report): void {
  if (report.aggregates.length > 0) {
    const scenarios = report.scenarios.map((s) => scenarioById(s.id));
    log(`\nAll scenarios (latency in ms; +p50/+p99 over the bare proxy; CPU s/1k = CPU seconds of the target's processes per 1,000 requests;`);
    log(`peak RSS: largest process per role, p = primary, w = worker; tgt/load cores: CPU used over wall time)\n`);
    log(unaryTable(report.aggregates, scenarios));
    if (scenarios.some((s) => s.stream)) log(`\nStreams (ms; gap = time between SSE events as the client receives them)\n\n${streamTable(report.aggregates, scenarios)}`);
    log(`\nRatios\n\n${ratioTable(report.aggregates, scenarios)}`);
    if (report.aggregates.some((a) => a.kind === 'tollgate')) log(`\nTollgate's CPU per request by process (µs)\n\n${roleTable(report.aggregates)}`);
    if (report.aggregates.some((a) => a.loopDelay != null)) log(`\nThe HTTP workers' event loop while each scenario ran (from /metrics)\n\n${loopTable(report.aggregates)}`);
  }
  if (report.sweep) log(`\n${report.sweep.table}\n\n${report.sweep.verdict.text}`);
  if (report.goals.length > 0) log(`\nGoals: each figure against its limit (JSON: goals[].id)\n\n${goalsTable(report.goals)}`);
  if (report.mixed.length > 0) log(`\nSmall calls beside heavy work (goal: p99 within ${report.mixed[0]!.limit}× of the same calls alone)\n\n${mixedTable(report.mixed)}`);
  if (report.skipped.length > 0) log(`\nNot measured\n${skippedText(report.skipped)}`);
  if (report.profile) log(`\n${report.profile.text}`);
}

main().then(
  (code) => process.exit(code),
  async (err: Error) => {
    log(`bench failed: ${err.stack ?? err}`);
    await stopAll();
    process.exit(1);
  },
);
