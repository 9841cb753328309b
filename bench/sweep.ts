// Sweep mode, for operators: one Tollgate per (WORKERS, PISCINA_MAX_THREADS)
// setting, all started at once (each with its own embedded store) so that
// their jobs interleave like targets do, in an order that changes each round
// (jobs.ts slotOrder), with the bare proxy in every cell as the floor. Then
// the grid, and the best setting.
// Another build (--tollgate-from) or other settings (--variant) run every
// setting too, labelled "<name> W… T…", so a before/after of the scaling comes
// from one run; the best setting and the goals read this build's alone.
// An error from this build or the bare proxy fails the run, as in the other
// modes. A comparison's setting that answers errors is only dropped from the
// rest of the sweep, with its reason: an old build that falls over at W12
// (92f21b8 answered 503 to every call at W8 and W12 on 16 cores) is the
// before picture, and it once cost the whole run's figures.
import type { Options } from './cli.js';
import { assertClean, jobFor, progress, slotOrder } from './jobs.js';
import { measure, type MeasureContext, type Sample } from './measure.js';
import { sweepScalingGoal, workerScalingGoal, type Goal } from './goals.js';
import { sweepCpuTable, sweepTable } from './report-text.js';
import { aggregate, type Aggregate } from './results.js';
import { scenarioById } from './scenarios.js';
import { chooseBest, sweepCells, sweepLabel, type SweepCell, type SweepSetting, type SweepVerdict } from './sweep-model.js';
import { startTollgate, type Target, type TargetKind } from './targets.js';

export interface SweepResult {
  settings: SweepSetting[];
  connections: number[];
  scenarios: string[];
  samples: Sample[];
  aggregates: Aggregate[];
  cells: SweepCell[];
  verdict: SweepVerdict;
  /** Largest process per role over the sweep, by setting label (bytes). */
  peakRss: Record<string, Record<string, number>>;
  table: string;
  /** Issue 14: a worker's CPU per call does not grow with WORKERS; issue 32: calls/s rise with WORKERS (none when the sweep had one WORKERS value, or did not finish). */
  goals: Goal[];
  /** Comparison settings that answered errors, by label: what they answered; their figures stop at the slot before. */
  dropped: Record<string, string>;
  /** Set when the run failed part-way: the figures above are what was measured until then. */
  failed?: string;
}

/** Runs the sweep into `into.sweep` (the report), which holds what was measured even when the run fails part-way (then it throws). */
export async function runSweep(ctx: MeasureContext, o: Options, simUrl: string, bare: Target, gwCpus: string | null, into: { sweep?: SweepResult }, log: (s: string) => void): Promise<void> {
  const settings: SweepSetting[] = [];
  for (const workers of o.sweep.workers) for (const threads of o.sweep.threads) settings.push({ label: sweepLabel(workers, threads), workers, threads });
  const others: SweepSetting[] = o.variants.flatMap((v) => settings.map((s) => ({ ...s, label: `${v.name} ${s.label}` })));
  const gateways: Target[] = [];
  const samples: Sample[] = [];
  const dropped: Record<string, string> = {};
  const compared = new Set(others.map((s) => s.label));
  // A comparison's error drops it; anyone else's fails the run.
  const judge = (sample: Sample): boolean => {
    if (sample.result.errors === 0) return true;
    if (!compared.has(sample.target)) assertClean(sample);
    const r = sample.result;
    dropped[sample.target] = `${r.errors} error(s) in ${sample.scenario === 'warm-up' ? 'its warm-up' : `${sample.scenario}, round ${sample.round}`}: ${JSON.stringify(r.errorKinds)}`;
    log(`  ${sample.target} answered ${dropped[sample.target]}; dropped from the rest of the sweep`);
    return false;
  };
  let failure: Error | null = null;
  try {
    for (const s of settings) {
      log(`starting Tollgate ${s.label} (WORKERS=${s.workers}, PISCINA_MAX_THREADS=${s.threads})…`);
      gateways.push(await startTollgate({ name: s.label, cpus: gwCpus, simUrl, workers: s.workers, piscinaMaxThreads: s.threads, keyConcurrency: Math.max(...o.sweep.connections) }));
    }
    for (const v of o.variants) {
      for (const s of settings) {
        log(`starting Tollgate ${v.name} ${s.label} (${v.root ?? 'this build'}, WORKERS=${s.workers}, PISCINA_MAX_THREADS=${s.threads})…`);
        gateways.push(await startTollgate({ name: `${v.name} ${s.label}`, cpus: gwCpus, simUrl, workers: s.workers, piscinaMaxThreads: s.threads, root: v.root, env: v.env, nodeArgs: v.nodeArgs, keyConcurrency: Math.max(...o.sweep.connections) }));
      }
    }
    const targets = [bare, ...gateways];
    const warm = scenarioById('unary');
    for (const t of targets) judge(await measure(ctx, t, 'warm-up', 0, { ...jobFor(t, warm, o), warmupMs: o.warmTargetMs, durationMs: 200 }));
    const total = o.rounds * o.sweep.scenarios.length * o.sweep.connections.length * targets.length;
    let i = 0;
    for (let round = 1; round <= o.rounds; round++) {
      for (const id of o.sweep.scenarios) {
        const scenario = scenarioById(id);
        for (const conns of o.sweep.connections) {
          for (const t of slotOrder(targets, round)) {
            if (t.name in dropped) {
              i++;
              continue;
            }
            const sample = await measure(ctx, t, `${id}@${conns}`, round, jobFor(t, scenario, o, conns));
            log(progress(++i, total, sample));
            // A failing slot's calls per second are not a figure of the setting: it is kept out of the tables.
            if (judge(sample)) samples.push(sample);
          }
        }
      }
    }
  } catch (err) {
    failure = err as Error;
  } finally {
    await Promise.all(gateways.map((g) => g.stop()));
  }
  const kinds = new Map<string, TargetKind>([[bare.name, 'bare'], ...[...settings, ...others].map((s) => [s.label, 'tollgate'] as [string, TargetKind])]);
  const aggregates = aggregate(samples, kinds);
  const labels = settings.map((s) => s.label);
  const cells = sweepCells(aggregates, [bare.name, ...labels]);
  // The floor is shown in every cell but is not a setting one can choose.
  for (const c of cells) c.best = labels.reduce((b, l) => (c.results[l] && (!c.results[b] || c.results[l]!.rps > c.results[b]!.rps) ? l : b), labels[0]!);
  const verdict = chooseBest(cells, settings);
  const noise = samples.reduce((sum, x) => sum + x.otherCores, 0) / Math.max(1, samples.length);
  if (noise > 0.2) verdict.text += ` Other processes took ${noise.toFixed(2)} cores on average meanwhile: differences of a few tens of percent may be noise; rerun on a quiet machine before choosing.`;
  const peakRss: Record<string, Record<string, number>> = {};
  for (const a of aggregates) {
    const byRole = (peakRss[a.target] ??= {});
    for (const [role, b] of Object.entries(a.peakRssByRole)) byRole[role] = Math.max(byRole[role] ?? 0, b);
  }
  const shown: SweepSetting[] = [{ label: bare.name, workers: 0, threads: 0 }, ...settings, ...others];
  const scenario = o.sweep.scenarios.includes('unary') ? `unary@${Math.max(...o.sweep.connections)}` : `${o.sweep.scenarios[0]}@${Math.max(...o.sweep.connections)}`;
  const droppedText = Object.entries(dropped).map(([label, why]) => `\n\nDropped: ${label} answered ${why}; its figures above stop at the slot before.`).join('');
  into.sweep = {
    settings,
    connections: o.sweep.connections,
    scenarios: o.sweep.scenarios,
    samples,
    aggregates,
    cells,
    verdict,
    peakRss,
    table:
      `Sweep (req/s / p99 ms per cell; "bare" is the floor, not a setting)${failure === null ? '' : '; the run failed part-way: what was measured until then'}\n\n${sweepTable(cells, shown)}\n\n` +
      `CPU per call (µs: all processes = primary + workers + db; cores = CPU over wall time)\n\n${sweepCpuTable(cells, shown)}${droppedText}`,
    goals: failure !== null ? [] : [workerScalingGoal(aggregates, settings, scenario), sweepScalingGoal(aggregates, settings, scenario)].filter((g): g is Goal => g !== null),
    dropped,
    ...(failure === null ? {} : { failed: failure.message }),
  };
  if (failure !== null) throw failure;
}
