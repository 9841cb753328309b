// The report as files: raw JSON (every sample with its histograms, so any
// figure can be recomputed) and a self-contained HTML page.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { packageRoot } from '../src/config/paths.js';
import type { Options } from './cli.js';
import type { Sample } from './measure.js';
import type { MicroResult } from './micro.js';
import type { ProfileSummary } from './profile.js';
import { renderHtml } from './report-html.js';
import type { Goal } from './goals.js';
import type { Aggregate, MixedCheck } from './results.js';
import type { Scenario, SkippedScenario } from './scenarios.js';
import type { SweepResult } from './sweep.js';
import type { TargetKind } from './targets.js';

export interface Meta {
  mode: string;
  startedAt: string;
  node: string;
  cpu: string;
  cpus: number;
  memoryGb: number;
  git: string;
  pinning: { gateway: string; load: string } | null;
  settings: { rounds: number; slotMs: number; warmupMs: number; workers: number; threads: number };
  loadavgBefore: number[];
  loadavgAfter: number[];
  /** CPU taken by processes outside the run during the measured phases, in cores (mean, max over jobs). */
  otherCores: { mean: number; max: number };
  seconds: number;
}

export interface Report {
  meta: Meta;
  targets: Array<{ name: string; kind: TargetKind; origin: string; settings: Record<string, string | number> }>;
  scenarios: Array<Omit<Scenario, 'body'> & { bodyBytes: number }>;
  skipped: SkippedScenario[];
  samples: Sample[];
  aggregates: Aggregate[];
  /** Issue 14's targets, by stable id (goals.ts GOAL_IDS), per Tollgate target: compare runs of different commits id by id. */
  goals: Goal[];
  /** Mixed scenarios: the small calls' p99 beside heavy work against the same calls alone. */
  mixed: MixedCheck[];
  sweep?: SweepResult;
  profile?: ProfileSummary;
  micro?: MicroResult;
  /** Why the run stopped early, when it did. */
  failed?: string;
}

function gitRevision(): string {
  try {
    const rev = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: packageRoot, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src', 'workers'], { cwd: packageRoot, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return dirty === '' ? rev : `${rev} (src modified)`;
  } catch {
    return 'unknown';
  }
}

export function buildMeta(o: Options, pinned: boolean): Meta {
  return {
    mode: o.mode,
    startedAt: new Date().toISOString(),
    node: process.version,
    cpu: cpus()[0]?.model ?? 'unknown',
    // cpus().length, not availableParallelism(): the runner has pinned itself to the load core by now.
    cpus: cpus().length,
    memoryGb: Math.round(totalmem() / 2 ** 30),
    git: gitRevision(),
    pinning: pinned ? { gateway: o.gatewayCpus, load: o.loadCpus } : null,
    settings: { rounds: o.rounds, slotMs: o.slotMs, warmupMs: o.warmupMs, workers: o.workers, threads: o.threads },
    loadavgBefore: loadavg(),
    loadavgAfter: [],
    otherCores: { mean: 0, max: 0 },
    seconds: 0,
  };
}

export function writeReports(dir: string, report: Report): { json: string; html: string } {
  mkdirSync(dir, { recursive: true });
  const stamp = report.meta.startedAt.replace(/[:.]/g, '-').replace(/-\d+Z$/, 'Z');
  const base = join(dir, `bench-${report.meta.mode}-${stamp}`);
  const json = `${base}.json`;
  const html = `${base}.html`;
  writeFileSync(json, JSON.stringify(report) + '\n');
  writeFileSync(html, renderHtml(report));
  return { json, html };
}
