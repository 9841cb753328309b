// --profile: where a Tollgate worker's CPU goes under the unary scenario (or --profile-scenario). A
// separate Tollgate runs with `--cpu-prof` (given to the primary, which
// cluster.fork passes on to the workers; NODE_OPTIONS refuses it), takes the unary load, and is stopped so V8 writes its profiles.
// Only samples taken while the load ran are counted (V8's profile clock and
// process.hrtime are both CLOCK_MONOTONIC), so start-up and warm-up do not
// blur the picture. Self time is grouped by function and by module.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Options } from './cli.js';
import { assertClean, jobFor } from './jobs.js';
import { measure, type MeasureContext } from './measure.js';
import { groupOf, moduleOf, type Frame } from './profile-modules.js';
import { scenarioById } from './scenarios.js';
import { startTollgate } from './targets.js';

export interface CpuProfile {
  nodes: Array<{ id: number; callFrame: Frame; children?: number[] }>;
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileLine {
  name: string;
  selfMs: number;
  pct: number;
  /** Self time per request answered while profiled, µs. */
  usPerRequest?: number;
}

export interface ProfilePart {
  process: string;
  pid: number;
  sampledMs: number;
  groups: ProfileLine[];
  modules: ProfileLine[];
  functions: ProfileLine[];
  /**
   * The longest run of consecutive samples that were not idle: the longest task the thread ran (GC included), to
   * within a sample. `samples` × the sampling interval is its length on the CPU (a sample is taken only while the
   * thread runs, so time it was preempted mostly falls out); `wallMs` adds whatever the samples' gaps held. Its
   * samples by the function each task was entered through (the frame below the profile's root: a timer, a uWS
   * callback, the microtask queue; back-to-back tasks with no idle sample between them share one run) and by self time.
   */
  longestBusy: { samples: number; wallMs: number; gcSamples: number; entries: ProfileLine[]; functions: ProfileLine[] };
}

export interface ProfileSummary {
  scenario: string;
  requests: number;
  rps: number;
  /** CPU µs per request of all Tollgate processes while profiled (profiling itself adds some). */
  cpuUsPerRequest: number;
  parts: ProfilePart[];
  text: string;
}

const r1 = (x: number): number => Math.round(x * 10) / 10;

/** V8's sampling interval for the profiled Tollgate, µs. */
const PROFILE_INTERVAL_US = 200;

function top(map: Map<string, number>, total: number, n: number): ProfileLine[] {
  return [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([name, us]) => ({ name, selfMs: r1(us / 1000), pct: r1((us / total) * 100) }));
}

/** Self time per function, module and group, from samples taken inside [fromUs, toUs]. */
export function summarise(profile: CpuProfile, fromUs: number, toUs: number, label: string, pid: number): ProfilePart {
  const byId = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  // Natives (a socket write, a builtin) and Node's own plumbing are charged to the nearest
  // caller in a package or in Tollgate: writeUtf8String under the IPC channel is IPC, the same
  // write under pino's destination is logging.
  const where = (f: Frame): string => (f.url === '' ? '' : ` ${f.url.replace(/^.*\/(node_modules|dist)\//, '$1/')}:${f.lineNumber + 1}`);
  const owner = new Map<number, { module: string; name: string }>();
  const ownerOf = (id: number): { module: string; name: string } => {
    let o = owner.get(id);
    if (o !== undefined) return o;
    const frame = byId.get(id)!;
    const own = moduleOf(frame);
    let caller = isPlumbing(own) ? parent.get(id) : undefined;
    while (caller !== undefined && isPlumbing(moduleOf(byId.get(caller)!))) caller = parent.get(caller);
    const cf = caller !== undefined ? byId.get(caller)! : undefined;
    o =
      cf !== undefined
        ? { module: moduleOf(cf), name: `${frame.functionName || '(anonymous)'}${where(frame)} ← ${cf.functionName || '(anonymous)'}${where(cf)}` }
        : { module: own, name: `${frame.functionName || '(anonymous)'}${where(frame)}` };
    owner.set(id, o);
    return o;
  };
  const fns = new Map<string, number>();
  const mods = new Map<string, number>();
  const groups = new Map<string, number>();
  let t = profile.startTime;
  let total = 0;
  const longestBusy: ProfilePart['longestBusy'] = { samples: 0, wallMs: 0, gcSamples: 0, entries: [], functions: [] };
  let longest = { from: 0, to: -1 };
  let run = 0;
  let runFrom = 0;
  let runGc = 0;
  let runStart = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    if (t < fromUs || t > toUs) continue;
    const id = profile.samples[i]!;
    const frame = byId.get(id);
    if (frame === undefined || frame.functionName === '(idle)') {
      run = 0;
      runGc = 0;
      continue;
    }
    if (run++ === 0) {
      runStart = t;
      runFrom = i;
    }
    if (frame.functionName === '(garbage collector)') runGc++;
    if (run > longestBusy.samples) {
      longestBusy.samples = run;
      longestBusy.gcSamples = runGc;
      longestBusy.wallMs = r1((t - runStart) / 1000);
      longest = { from: runFrom, to: i };
    }
    const us = profile.timeDeltas[i + 1] ?? profile.timeDeltas[i] ?? 0;
    const { module, name } = ownerOf(id);
    const group = groupOf(module, frame);
    fns.set(name, (fns.get(name) ?? 0) + us);
    mods.set(module, (mods.get(module) ?? 0) + us);
    groups.set(group, (groups.get(group) ?? 0) + us);
    total += us;
  }
  // The longest run's samples: the task entry below the root (the root's child), and the function itself.
  const entryOf = (id: number): string => {
    let at = id;
    for (let up = parent.get(at); up !== undefined && parent.get(up) !== undefined; up = parent.get(up)) at = up;
    const f = byId.get(at)!;
    return `${f.functionName || '(anonymous)'}${where(f)}`;
  };
  const entries = new Map<string, number>();
  const inRun = new Map<string, number>();
  for (let i = longest.from; i <= longest.to; i++) {
    const id = profile.samples[i]!;
    const entry = entryOf(id);
    const name = ownerOf(id).name;
    entries.set(entry, (entries.get(entry) ?? 0) + 1);
    inRun.set(name, (inRun.get(name) ?? 0) + 1);
  }
  longestBusy.entries = top(entries, longestBusy.samples, 4);
  longestBusy.functions = top(inRun, longestBusy.samples, 4);
  return { process: label, pid, sampledMs: r1(total / 1000), groups: top(groups, total, 30), modules: top(mods, total, 25), functions: top(fns, total, 25), longestBusy };
}

/** Code that works on someone else's behalf: V8 builtins other than JSON, and Node's core modules. */
function isPlumbing(module: string): boolean {
  return module.startsWith('V8 builtin') || module.startsWith('node:');
}

function render(s: Omit<ProfileSummary, 'text'>): string {
  const lines = [`CPU profile of Tollgate under '${s.scenario}' (${s.rps} req/s, ${s.cpuUsPerRequest} µs CPU/request with the profiler on)`];
  for (const p of s.parts) {
    lines.push(`\n${p.process} (pid ${p.pid}): ${p.sampledMs} ms of CPU sampled while the load ran`);
    lines.push(`  longest task: ${p.longestBusy.samples} consecutive busy samples (~${r1((p.longestBusy.samples * PROFILE_INTERVAL_US) / 1000)} ms on the CPU, ${p.longestBusy.gcSamples} of them garbage collection; ${p.longestBusy.wallMs} ms from its first sample to its last)`);
    const share = (l: ProfileLine[]): string => l.map((x) => `${x.name} ${x.pct}%`).join(', ');
    if (p.longestBusy.samples > 0) lines.push(`    entered through: ${share(p.longestBusy.entries)}`, `    its top self time: ${share(p.longestBusy.functions)}`);
    lines.push('  by group:     ' + p.groups.map((g) => `${g.name} ${g.pct}% (${g.usPerRequest} µs/req)`).join(', '));
    lines.push('  top self time:');
    for (const f of p.functions.slice(0, Number(process.env.PROFILE_TOP ?? 15))) lines.push(`    ${String(f.pct).padStart(5)}%  ${f.name}`);
  }
  return lines.join('\n');
}

export async function runProfile(ctx: MeasureContext, o: Options, simUrl: string, gwCpus: string | null, log: (s: string) => void): Promise<ProfileSummary> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-prof-'));
  const ext = o.profileExt ? { databaseUrl: o.databaseUrl, redisUrl: o.redisUrl } : {};
  log(`profiling: starting a Tollgate with --cpu-prof${o.profileExt ? ' on the given DATABASE_URL / REDIS_URL' : ''}…`);
  // 200 µs sampling: a request costs ~100-200 µs, so the default 1 ms would see too few; finer costs too much.
  const nodeArgs = ['--cpu-prof', `--cpu-prof-dir=${dir}`, `--cpu-prof-interval=${PROFILE_INTERVAL_US}`];
  const gw = await startTollgate({ name: 'tollgate-profiled', cpus: gwCpus, simUrl, workers: o.workers, piscinaMaxThreads: o.threads, nodeArgs, ...ext });
  const scenario = scenarioById(o.profileScenario);
  let from = 0;
  let to = 0;
  let roles: Array<{ pid: number; role: string }> = [];
  let sample;
  try {
    roles = gw.processes();
    assertClean(await measure(ctx, gw, 'warm-up', 0, { ...jobFor(gw, scenario, o), warmupMs: o.warmTargetMs, durationMs: 200 }));
    from = Number(process.hrtime.bigint() / 1000n);
    sample = await measure(ctx, gw, 'profile', 1, { ...jobFor(gw, scenario, o), warmupMs: 0, durationMs: Math.max(3000, o.slotMs * 2) });
    to = Number(process.hrtime.bigint() / 1000n);
    assertClean(sample);
  } finally {
    await gw.stop();
  }
  const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
  const parts: ProfilePart[] = [];
  for (const r of roles) {
    // CPU.<date>.<time>.<pid>.<thread id>.<seq>.cpuprofile; thread 0 is the main thread.
    const file = files.find((f) => f.split('.')[3] === String(r.pid) && f.split('.')[4] === '0');
    if (file === undefined) {
      log(`profiling: no profile from the ${r.role} (pid ${r.pid}); did it exit cleanly?`);
      continue;
    }
    const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile;
    parts.push(summarise(profile, from, to, r.role === 'primary' ? 'primary (store, ledger actors)' : 'HTTP worker, main thread', r.pid));
  }
  rmSync(dir, { recursive: true, force: true });
  const r = sample!.result;
  const cpu = sample!.processes.reduce((s, p) => s + p.cpuMs, 0);
  for (const part of parts) for (const line of [...part.groups, ...part.modules, ...part.functions]) line.usPerRequest = r1((line.selfMs * 1000) / Math.max(1, r.requests));
  const base = {
    scenario: scenario.id,
    requests: r.requests,
    rps: Math.round((r.requests / r.elapsedMs) * 1000),
    cpuUsPerRequest: Math.round((cpu / Math.max(1, r.requests)) * 1000),
    parts: parts.sort((a, b) => (a.process < b.process ? 1 : -1)),
  };
  return { ...base, text: render(base) };
}
