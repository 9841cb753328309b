// Running scenarios: one load generator job per (scenario, round, target),
// targets interleaved in a balanced order that changes from round to round
// (slotOrder) so that a noisy neighbour hurts every target alike and no target
// keeps one slot or one predecessor, and any error stops the run.
import type { Options } from './cli.js';
import { awaitQuiet, measure, type MeasureContext, type Sample } from './measure.js';
import type { LoadJob } from './loadgen-job.js';
import type { Report } from './report-files.js';
import { MIXED_SCENARIOS, SCENARIOS, scenarioById, type Scenario } from './scenarios.js';
import type { Target } from './targets.js';

const log = (s: string): void => void process.stderr.write(`${s}\n`);

/**
 * Runs the scenario's foreground job while its `beside` workload runs on the
 * second load generator for the whole of it (started first, so the gateway is
 * already busy with it when the foreground's warm-up begins).
 */
async function measureBeside(ctx: MeasureContext, t: Target, s: Scenario, round: number, o: Options): Promise<Sample> {
  const b = s.beside!;
  const bg: LoadJob = { ...besideJob(t, s, o), warmupMs: 0, durationMs: o.warmupMs + o.slotMs + 500 };
  const background = ctx.background!.run(bg, () => {});
  await new Promise((r) => setTimeout(r, 250));
  const sample = await measure(ctx, t, s.id, round, jobFor(t, s, o));
  const result = await background;
  sample.beside = { what: b.what, requests: result.requests, errors: result.errors, result };
  if (result.errors > 0) sample.result.errors += result.errors; // a failing background fails the run, as any error does
  return sample;
}

/** The heavy work a mixed scenario sends beside its small calls, as a job of its own. */
function besideJob(t: Target, s: Scenario, o: Options): LoadJob {
  const b = s.beside!;
  return jobFor(t, { ...s, path: b.path, body: b.body, concurrency: b.concurrency, expectSuffix: b.expectSuffix, stream: false, rate: b.rate }, o);
}

export function jobFor(target: Target, s: Scenario, o: Options, concurrency = s.concurrency): LoadJob {
  return {
    origin: target.origin,
    path: `${target.pathPrefix}${s.path ?? '/v1/chat/completions'}`,
    headers: target.headers,
    body: s.body,
    concurrency,
    keepAlive: s.keepAlive,
    stream: s.stream,
    expectSuffix: s.expectSuffix,
    warmupMs: o.warmupMs,
    durationMs: o.slotMs,
    maxRequests: 5_000_000,
    ...(s.rate === undefined ? {} : { ratePerSec: s.rate }),
  };
}

/**
 * The targets in the order round `round` (from 1) measures them: the rows of
 * a Williams square, so that over n rounds for n targets (2n when n is odd)
 * every target takes every slot, and follows every other target, equally
 * often (A B C, B C A, C A B, C B A, A C B, B A C for three). In a
 * fixed order a target's slot and the one before it biased its figures: the
 * slot right after the bare proxy's read 0.87 of a core against 0.99 for the
 * same build later (2026-11-26) and a one-connection p99 of +1.19 ms against
 * +0.21 (2026-11-29), and the goals read that slot. A plain rotation would
 * keep each target behind the same neighbour.
 */
export function slotOrder<T>(targets: readonly T[], round: number): T[] {
  const n = targets.length;
  if (n < 2) return [...targets];
  // Column j of row 0 is 0, 1, n-1, 2, n-2, …; row r adds r (mod n); for odd n the next n rows are those reversed.
  const row = (round - 1) % (n % 2 === 0 ? n : 2 * n);
  const order = Array.from({ length: n }, (_, j) => targets[((j % 2 === 1 ? (j + 1) / 2 : n - j / 2) + row) % n]!);
  return row < n ? order : order.reverse();
}

/** Any error fails the run: print what came back, keep the partial report, exit non-zero. */
export class RunFailed extends Error {}

export function assertClean(s: Sample): void {
  const r = s.result;
  if (r.errors === 0) return;
  throw new RunFailed(
    `${s.target} answered ${r.errors} error(s) in scenario ${s.scenario} (round ${s.round}): ${JSON.stringify(r.errorKinds)}\n  ` + r.errorSamples.join('\n  '),
  );
}

export function progress(i: number, n: number, s: Sample): string {
  const r = s.result;
  const rps = r.elapsedMs > 0 ? Math.round((r.requests / r.elapsedMs) * 1000) : 0;
  const cpu = s.processes.reduce((sum, p) => sum + p.cpuMs, 0);
  const perReq = r.requests > 0 && s.processes.length > 0 ? `${((cpu / r.requests) * 1000).toFixed(0)} µs CPU/req` : '';
  const noise = s.otherCores >= 0.05 ? `  (other processes: ${s.otherCores.toFixed(2)} cores)` : '';
  return `[${String(i).padStart(3)}/${n}] ${s.scenario.padEnd(14)} ${s.target.padEnd(13)} r${s.round}  ${String(rps).padStart(6)} req/s  ${String(r.requests).padStart(6)} req  ${perReq}${noise}`;
}


export async function runScenarios(ctx: MeasureContext, o: Options, targets: Target[], report: Report): Promise<void> {
  const scenarios = o.scenarios.map(scenarioById);
  // Bodies are not copied into the report (a mixed scenario's background body is a megabyte): only their sizes.
  report.scenarios = scenarios.map(({ body, beside, ...rest }) => ({
    ...rest,
    bodyBytes: Buffer.byteLength(body),
    ...(beside === undefined ? {} : { beside: { ...beside, body: `(${Buffer.byteLength(beside.body)} bytes)` } }),
  }));
  // JIT, connection pools and the gateway's caches warm on every target before anything is recorded.
  const warm = SCENARIOS[0]!;
  for (const t of targets) {
    log(`warming ${t.name}…`);
    const s = await measure(ctx, t, 'warm-up', 0, { ...jobFor(t, warm, o), warmupMs: o.warmTargetMs, durationMs: 200 });
    assertClean(s);
  }
  const applies = (s: Scenario, t: Target): boolean => !s.gatewayOnly || t.kind === 'tollgate' || t.kind === 'extra';
  // The mixed scenarios' heavy work too, once per distinct body: the simulator builds and caches a large reply the
  // first time it is asked, and a target starts its pool threads on first need. Unwarmed, the first target measured
  // paid both in its first round (small calls beside embeddings 9–18× their baseline there, in three runs).
  const heavy = new Map(scenarios.flatMap((s) => (s.beside === undefined ? [] : [[s.beside.body, s] as const])));
  for (const t of targets) {
    for (const s of heavy.values()) {
      if (!applies(s, t)) continue;
      log(`warming ${t.name} with ${s.beside!.what}…`);
      // Closed loop, whatever the scenario's pace: the warm-up is about having answered, not about timing.
      assertClean(await measure(ctx, t, 'warm-up', 0, { ...besideJob(t, s, o), ratePerSec: undefined, warmupMs: o.warmTargetMs, durationMs: 200 }));
    }
  }
  const total = scenarios.reduce((n, s) => n + o.rounds * targets.filter((t) => applies(s, t)).length, 0);
  let i = 0;
  const run = async (s: Scenario, round: number, t: Target): Promise<void> => {
    if (!applies(s, t)) return;
    const waited = await awaitQuiet(o.quietMaxMs);
    if (waited >= 1000) log(`  (waited ${(waited / 1000).toFixed(1)} s for the machine to go quiet before ${t.name})`);
    const sample = s.beside !== undefined ? await measureBeside(ctx, t, s, round, o) : await measure(ctx, t, s.id, round, jobFor(t, s, o));
    report.samples.push(sample);
    log(progress(++i, total, sample));
    assertClean(sample);
  };
  // The mixed scenarios go round by round (alone, beside A, beside B, … then again), so each
  // small-call baseline is measured next to the runs it is compared with, minutes apart at most.
  const plain = scenarios.filter((s) => !MIXED_SCENARIOS.includes(s));
  const mixed = scenarios.filter((s) => MIXED_SCENARIOS.includes(s));
  for (const s of plain) for (let round = 1; round <= o.rounds; round++) for (const t of slotOrder(targets, round)) await run(s, round, t);
  for (let round = 1; round <= o.rounds; round++) for (const s of mixed) for (const t of slotOrder(targets, round)) await run(s, round, t);
}

