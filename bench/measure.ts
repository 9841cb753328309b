// One measured job: the load generator (its own process) drives a target while
// the runner reads the target's CPU time from /proc at the edges of the
// recorded phase and samples its processes' resident memory during it.
import { join } from 'node:path';
import { packageRoot } from '../src/config/paths.js';
import { Histogram, type HistogramJson } from './histogram.js';
import type { LoadClient, LoadJob, LoadMessage, LoadResult } from './loadgen-job.js';
import { scrapeLoopDelay, type LoopDelay } from './event-loop.js';
import { contextSwitches, cpuMs, cpuMsReaped, machineBusyMs, mainThreadCpuMs, pssBytes, rssBytes, Spawned } from './procs.js';
import type { ProcessRole, Target } from './targets.js';

const RSS_SAMPLE_MS = 100;

/** One load generator process (bench/loadgen.ts), driven over IPC. */
class LoadGenProcess {
  private onMessage: ((m: LoadMessage) => void) | null = null;

  private constructor(readonly proc: Spawned) {
    proc.proc.on('message', (m: LoadMessage) => this.onMessage?.(m));
  }

  static async start(cpus: string | null, client: LoadClient): Promise<LoadGenProcess> {
    const proc = new Spawned('load generator', [join(packageRoot, 'dist/bench/loadgen.js')], { cpus, ipc: true, env: { ...process.env, TOLLGATE_BENCH_CLIENT: client } });
    const gen = new LoadGenProcess(proc);
    await new Promise<void>((resolve, reject) => {
      gen.onMessage = (m) => m.type === 'ready' && resolve();
      void proc.exited.then((code) => reject(new Error(`load generator exited (${code})\n${proc.tail()}`)));
    });
    return gen;
  }

  /** Runs `job`: calls `warmed` once its warm-up is over, and starts the recorded phase when `go` resolves. */
  run(job: LoadJob, warmed: () => void, go: Promise<void>): Promise<LoadResult> {
    return new Promise((resolve, reject) => {
      const gone = (code: number | null): void => reject(new Error(`load generator exited (${code}) during a job\n${this.proc.tail()}`));
      void this.proc.exited.then(gone);
      this.onMessage = (m) => {
        if (m.type === 'measuring') {
          warmed();
          void go.then(() => this.proc.proc.send({ type: 'go' }));
        } else if (m.type === 'result') resolve(m.result);
        else if (m.type === 'failed') reject(new Error(`load generator: ${m.message}`));
      };
      this.proc.proc.send({ type: 'job', job });
    });
  }
}

/**
 * The load: one process, or several (--load-procs) when one cannot make the
 * calls the target serves (a cluster of 12 workers on a 16-core machine
 * answers more than one client process sends). A job's connections, pace and
 * request cap are split between them; each warms up, the target's CPU is
 * read once all of them have, then all record together and their results
 * are merged (histograms add up; the recorded phase is the longest).
 */
export class LoadGen {
  private constructor(private readonly procs: LoadGenProcess[]) {}

  static async start(cpus: string | null, processes = 1, client: LoadClient = 'undici'): Promise<LoadGen> {
    return new LoadGen(await Promise.all(Array.from({ length: processes }, () => LoadGenProcess.start(cpus, client))));
  }

  /** Runs `job`; `measuring` is called (and awaited) between the warm-up and the recorded phase. */
  async run(job: LoadJob, measuring: () => void): Promise<LoadResult> {
    const shares = splitJob(job, this.procs.length);
    let warm = 0;
    let go!: () => void;
    const started = new Promise<void>((r) => (go = r));
    const warmed = (): void => {
      if (++warm < shares.length) return;
      measuring();
      go();
    };
    return mergeResults(await Promise.all(shares.map((share, i) => this.procs[i]!.run(share, warmed, started))));
  }

  stop(): Promise<void> {
    return Promise.all(this.procs.map((p) => p.proc.stop(2000))).then(() => {});
  }
}

/** `job` split between `n` load processes: connections, pace and the request cap (a process gets at least one connection). */
export function splitJob(job: LoadJob, n: number): LoadJob[] {
  const parts = Math.max(1, Math.min(n, job.concurrency));
  return Array.from({ length: parts }, (_, i) => {
    const share = (total: number): number => Math.floor(total / parts) + (i < total % parts ? 1 : 0);
    return {
      ...job,
      concurrency: share(job.concurrency),
      maxRequests: Math.ceil(job.maxRequests / parts),
      ...(job.ratePerSec === undefined ? {} : { ratePerSec: job.ratePerSec / parts }),
    };
  });
}

export function mergeResults(results: LoadResult[]): LoadResult {
  if (results.length === 1) return results[0]!;
  const merged = (pick: (r: LoadResult) => HistogramJson | null): HistogramJson | null =>
    results.some((r) => pick(r) === null) ? null : results.reduce((h, r) => h.merge(pick(r)!), new Histogram()).toJSON();
  const errorKinds: Record<string, number> = {};
  for (const r of results) for (const [k, c] of Object.entries(r.errorKinds)) errorKinds[k] = (errorKinds[k] ?? 0) + c;
  const sum = (pick: (r: LoadResult) => number): number => results.reduce((x, r) => x + pick(r), 0);
  return {
    requests: sum((r) => r.requests),
    errors: sum((r) => r.errors),
    errorKinds,
    errorSamples: results.flatMap((r) => r.errorSamples).slice(0, 5),
    elapsedMs: Math.max(...results.map((r) => r.elapsedMs)),
    latency: merged((r) => r.latency)!,
    ttfb: merged((r) => r.ttfb),
    gap: merged((r) => r.gap),
    events: sum((r) => r.events),
    bytesIn: sum((r) => r.bytesIn),
    cpuUserMs: sum((r) => r.cpuUserMs),
    cpuSystemMs: sum((r) => r.cpuSystemMs),
  };
}

export interface ProcessUse extends ProcessRole {
  cpuMs: number;
  /** Of cpuMs, what its main thread used (an HTTP worker's event loop; the rest is its pool and libuv threads). */
  mainThreadCpuMs: number;
  /** Context switches of its threads during the job (procs.ts contextSwitches). */
  contextSwitches: number;
  peakRssBytes: number;
}

export interface Sample {
  scenario: string;
  target: string;
  round: number;
  concurrency: number;
  result: LoadResult;
  /** The target's processes (for Tollgate: the primary and every worker). Empty when unknown (extra targets without --target-pid). */
  processes: ProcessUse[];
  /** The largest sum of the target's processes' proportional set sizes seen in one sampling tick (shared pages counted once). */
  peakTotalPssBytes: number;
  /** The simulator's CPU during the job: with the load generator's, what the load core spent. */
  simulatorCpuMs: number;
  /** CPU that processes outside this run (and the hypervisor) took during the job, in cores: the noise. */
  otherCores: number;
  /** The HTTP workers' event-loop delay over the recorded phase (the longest task, the p99 delay); null when the target does not report it. */
  loopDelay?: LoopDelay | null;
  /** The workload sent beside this one (mixed scenarios): what it was and how it fared. */
  beside?: { what: string; requests: number; errors: number; result: LoadResult };
}

export interface MeasureContext {
  loadgen: LoadGen;
  /** A second load generator, for the workload a mixed scenario sends beside its own (scenarios.ts `beside`). */
  background: LoadGen | null;
  /** The simulator's processes (--sim-procs). */
  simulatorPids: number[];
}

const QUIET_WINDOW_MS = 250;
/** Busy CPU time per window below which the machine counts as quiet: 0.04 cores, one 10 ms tick of /proc/stat. */
const QUIET_BUSY_MS = 10;

/**
 * Waits until the machine has been quiet for one window, at most `maxMs`
 * (Options.quietMaxMs: 5 s, 0.5 s in the quick mode, where a machine busy
 * with other work would otherwise add the whole 5 s to every job); answers
 * how long it waited. A Tollgate keeps working for a while after its load
 * stops (the journal's last write, then its PostgreSQL's
 * autovacuum and checkpoint, pinned to the gateways' CPU), and without this
 * wait that work ran in the next target's slot: an A/A run (2026-11-26, this
 * build twice, unary) gave the second copy 0.87 of a core against 0.99 and
 * 10% fewer calls per second, the same CPU per call.
 */
export async function awaitQuiet(maxMs: number): Promise<number> {
  const started = Date.now();
  for (;;) {
    const busy0 = machineBusyMs();
    await new Promise((r) => setTimeout(r, QUIET_WINDOW_MS));
    if (machineBusyMs() - busy0 <= QUIET_BUSY_MS || Date.now() - started >= maxMs) return Date.now() - started;
  }
}

export async function measure(ctx: MeasureContext, target: Target, scenario: string, round: number, job: LoadJob): Promise<Sample> {
  let roles = target.processes();
  const reaped = new Set(roles.filter((r) => r.reaped).map((r) => r.pid));
  const cpuOf = (pid: number): number | null => (reaped.has(pid) ? cpuMsReaped(pid) : cpuMs(pid));
  const pids = [...new Set([...roles.map((r) => r.pid), ...ctx.simulatorPids])];
  const before = new Map<number, number>();
  const mainBefore = new Map<number, number>();
  const switchesBefore = new Map<number, number>();
  const peak = new Map<number, number>();
  let peakTotal = 0;
  let timer: NodeJS.Timeout | null = null;
  // Each process's last PSS; the total is their sum. A sample during the load reads one process's
  // PSS, in turn (a full round costs the load generator's core 11 ms for a one-worker gateway's
  // 17 processes, and stalled its calls: +1 ms of one-connection p99, for the many-process targets
  // only); every process's is read before the job and after its recorded phase.
  const pss = new Map<number, number>();
  let pssTurn = 0;
  const sampleRss = (allPss: boolean): void => {
    for (const r of roles) {
      const rss = rssBytes(r.pid);
      if (rss !== null && rss > (peak.get(r.pid) ?? 0)) peak.set(r.pid, rss);
    }
    const from = allPss ? 0 : pssTurn++ % roles.length;
    for (const r of allPss ? roles : roles.slice(from, from + 1)) pss.set(r.pid, pssBytes(r.pid) ?? 0);
    let total = 0;
    for (const bytes of pss.values()) total += bytes;
    if (total > peakTotal) peakTotal = total;
  };
  let result: LoadResult;
  let busy0 = 0;
  let self0 = process.cpuUsage();
  // Empties every process's event-loop window before the job, so the window is the job's (its warm-up included).
  // Scraped outside the recorded phase: a scrape costs the primary ~1.5 ms and each worker ~0.5 ms, which
  // counted as the calls' CPU when it was taken as the phase began (about 1 µs per unary call in a 2 s slot).
  await scrapeLoopDelay(target.metricsUrl);
  sampleRss(true);
  try {
    result = await ctx.loadgen.run(job, () => {
      busy0 = machineBusyMs();
      self0 = process.cpuUsage();
      for (const pid of pids) {
        before.set(pid, cpuOf(pid) ?? 0);
        mainBefore.set(pid, mainThreadCpuMs(pid) ?? 0);
        switchesBefore.set(pid, contextSwitches(pid) ?? 0);
      }
      sampleRss(false);
      timer = setInterval(() => sampleRss(false), RSS_SAMPLE_MS);
    });
  } finally {
    if (timer !== null) clearInterval(timer);
  }
  sampleRss(true);
  // Processes that appeared during the job (a new server backend) count whole.
  const known = new Set(roles.map((r) => r.pid));
  const fresh = target.processes().filter((r) => !known.has(r.pid));
  for (const r of fresh) before.set(r.pid, 0);
  roles = [...roles, ...fresh];
  pids.push(...fresh.map((r) => r.pid));
  // Every reading of the job is taken now, before the scrape that reads its event-loop window.
  const since = (now: number | null, was: number | undefined): number => Math.max(0, (now ?? was ?? 0) - (was ?? 0));
  const usedBy = new Map(pids.map((pid) => [pid, since(cpuOf(pid), before.get(pid))]));
  const usedMainBy = new Map(pids.map((pid) => [pid, since(mainThreadCpuMs(pid), mainBefore.get(pid))]));
  const switchedBy = new Map(pids.map((pid) => [pid, since(contextSwitches(pid), switchesBefore.get(pid))]));
  const busyMs = machineBusyMs() - busy0;
  const self = process.cpuUsage(self0);
  const loopDelay = await scrapeLoopDelay(target.metricsUrl);
  const used = (pid: number): number => usedBy.get(pid) ?? 0;
  const switched = (pid: number): number => switchedBy.get(pid) ?? 0;
  const usedMain = (pid: number): number => usedMainBy.get(pid) ?? 0;
  const ours = pids.reduce((sum, pid) => sum + used(pid), 0) + result.cpuUserMs + result.cpuSystemMs + (self.user + self.system) / 1000;
  const otherCores = result.elapsedMs > 0 ? Math.max(0, busyMs - ours) / result.elapsedMs : 0;
  return {
    scenario,
    target: target.name,
    round,
    concurrency: job.concurrency,
    result,
    processes: roles.map((r) => ({ ...r, cpuMs: used(r.pid), mainThreadCpuMs: usedMain(r.pid), contextSwitches: switched(r.pid), peakRssBytes: peak.get(r.pid) ?? 0 })),
    peakTotalPssBytes: peakTotal,
    simulatorCpuMs: target.kind === 'direct' ? 0 : ctx.simulatorPids.reduce((sum, pid) => sum + used(pid), 0),
    otherCores: Math.round(otherCores * 100) / 100,
    loopDelay,
  };
}
