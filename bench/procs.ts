// Child processes of a bench run: spawned pinned to a core (taskset), watched
// for their ready line, measured through /proc, and always stopped — on
// success, error, Ctrl-C or SIGTERM (see stopAll and installCleanup).
import { execFileSync, spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { availableParallelism } from 'node:os';

const TAIL_BYTES = 16 * 1024;

export interface SpawnOptions {
  /** taskset CPU list (e.g. "0"), or null to leave the process unpinned. */
  cpus: string | null;
  env?: NodeJS.ProcessEnv;
  ipc?: boolean;
}

/** A process this run started. Its output is kept as a short tail, never parsed after start-up. */
export class Spawned {
  readonly proc: ChildProcess;
  private tailChunks: Buffer[] = [];
  private tailBytes = 0;
  private pending = '';
  private waiters: Array<{ pred: (l: Record<string, unknown>) => boolean; resolve: (l: Record<string, unknown>) => void }> = [];
  readonly exited: Promise<number | null>;

  constructor(
    readonly name: string,
    args: string[],
    opts: SpawnOptions,
  ) {
    const [cmd, ...rest] = opts.cpus !== null ? ['taskset', '-c', opts.cpus, process.execPath, ...args] : [process.execPath, ...args];
    const stdio: StdioOptions = opts.ipc ? ['ignore', 'pipe', 'pipe', 'ipc'] : ['ignore', 'pipe', 'pipe'];
    this.proc = spawn(cmd!, rest, { env: opts.env ?? process.env, stdio });
    running.add(this);
    this.exited = new Promise((resolve) =>
      this.proc.once('exit', (code, signal) => {
        running.delete(this);
        resolve(code ?? (signal !== null ? -1 : null));
      }),
    );
    this.proc.stdout!.on('data', (b: Buffer) => this.take(b, true));
    this.proc.stderr!.on('data', (b: Buffer) => this.take(b, false));
  }

  get pid(): number {
    return this.proc.pid!;
  }

  get alive(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }

  private take(b: Buffer, stdout: boolean): void {
    this.tailChunks.push(b);
    this.tailBytes += b.length;
    while (this.tailBytes - this.tailChunks[0]!.length > TAIL_BYTES) this.tailBytes -= this.tailChunks.shift()!.length;
    // Lines are parsed only while someone waits for one: a gateway logs a line per request, and
    // parsing them would cost CPU on the load generator's core.
    if (!stdout || this.waiters.length === 0) return;
    this.pending += b.toString();
    let nl: number;
    while ((nl = this.pending.indexOf('\n')) >= 0) {
      const text = this.pending.slice(0, nl);
      this.pending = this.pending.slice(nl + 1);
      let line: Record<string, unknown>;
      try {
        line = JSON.parse(text) as Record<string, unknown>;
      } catch {
        continue;
      }
      this.waiters = this.waiters.filter((w) => (w.pred(line) ? (w.resolve(line), false) : true));
    }
    if (this.waiters.length === 0) this.pending = '';
  }

  /** The last few KB of stdout and stderr, for error messages. */
  tail(): string {
    return Buffer.concat(this.tailChunks).toString().slice(-TAIL_BYTES);
  }

  /** Resolves with the first JSON stdout line matching `pred`; rejects on exit or timeout. */
  waitForLine(pred: (l: Record<string, unknown>) => boolean, timeoutMs: number): Promise<Record<string, unknown>> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.name}: not ready after ${timeoutMs} ms\n${this.tail()}`)), timeoutMs);
      this.waiters.push({ pred, resolve: (l) => (clearTimeout(timer), resolve(l)) });
      void this.exited.then((code) => {
        clearTimeout(timer);
        reject(new Error(`${this.name} exited (${code}) before it was ready\n${this.tail()}`));
      });
    });
  }

  /** SIGTERM, then SIGKILL after `graceMs`. */
  async stop(graceMs = 8000): Promise<void> {
    if (!this.alive) return;
    this.proc.kill('SIGTERM');
    const timer = setTimeout(() => this.alive && this.proc.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }
}

const running = new Set<Spawned>();

export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((p) => p.stop()));
}

/** Set once Ctrl-C, SIGTERM or SIGHUP arrived: the run is winding down, not failing. */
export let interrupted: string | null = null;

/**
 * Stops every child on Ctrl-C, SIGTERM, SIGHUP and crashes. On a signal the
 * children go first; the run then fails where it waits on them, writes its
 * partial report and exits 130 (forced after a few seconds if it cannot).
 */
export function installCleanup(log: (s: string) => void): void {
  let stopping = false;
  const bail = (why: string, code: number): void => {
    if (stopping) return;
    stopping = true;
    log(why);
    void stopAll().finally(() => setTimeout(() => process.exit(code), 5000));
  };
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(sig, () => {
      interrupted = sig;
      bail(`interrupted (${sig}); stopping everything this run started`, 130);
    });
  }
  process.on('uncaughtException', (err) => bail(`bench failed: ${err.stack ?? err}`, 1));
  process.on('unhandledRejection', (err) => bail(`bench failed: ${(err as Error)?.stack ?? err}`, 1));
  // Last resort, synchronous: nothing survives the runner.
  process.on('exit', () => {
    for (const p of running) if (p.alive) p.proc.kill('SIGKILL');
  });
}

/** --ports FROM-TO: every port the bench opens comes from this range (null: any free port the kernel picks). */
let portRange: { next: number; to: number } | null = null;

export function usePortRange(from: number, to: number): void {
  portRange = { next: from, to };
}

function tryListen(port: number): Promise<number | null> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(null));
    s.listen(port, '127.0.0.1', () => {
      const bound = (s.address() as { port: number }).port;
      s.close(() => resolve(bound));
    });
  });
}

export async function freePort(): Promise<number> {
  if (portRange === null) {
    const port = await tryListen(0);
    if (port === null) throw new Error('no free port');
    return port;
  }
  // In order through the range, each port handed out once: two targets never get the same one.
  while (portRange.next <= portRange.to) {
    const port = await tryListen(portRange.next++);
    if (port !== null) return port;
  }
  throw new Error('--ports: every port of the range is taken or already used');
}

/** Can we pin? taskset present and at least two CPUs. */
export function pinningAvailable(): boolean {
  if (availableParallelism() < 2) return false;
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Pins this process (all its threads) to `cpus`; children spawned without taskset inherit it. */
export function pinSelf(cpus: string): void {
  execFileSync('taskset', ['-a', '-p', '-c', cpus, String(process.pid)], { stdio: 'ignore' });
}

// ---- /proc readers (Linux) ----

/** utime + stime of a process (all its threads, live and exited) in ms; null once it is gone. */
export function cpuMs(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    // Fields after the command name, which may itself contain spaces and parentheses.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / CLK_TCK;
  } catch {
    return null;
  }
}

/** utime + stime of a process's main thread alone (for a Node process: its event loop) in ms; null once it is gone. */
export function mainThreadCpuMs(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'latin1');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / CLK_TCK;
  } catch {
    return null;
  }
}

/**
 * Context switches of a process's live threads, voluntary and not (each is a
 * sleep and a wake-up, or a preemption); null once it is gone. A count, so
 * steadier from run to run than CPU time on a VM whose speed drifts.
 */
export function contextSwitches(pid: number): number | null {
  try {
    let n = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const status = readFileSync(`/proc/${pid}/task/${tid}/status`, 'latin1');
      for (const m of status.matchAll(/ctxt_switches:\s+(\d+)/g)) n += Number(m[1]);
    }
    return n;
  } catch {
    return null;
  }
}

/** cpuMs plus the CPU of its children that exited and were waited for (cutime + cstime). */
export function cpuMsReaped(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * 1000) / CLK_TCK;
  } catch {
    return null;
  }
}

/**
 * Resident set size in bytes (statm's resident pages, the same figure as
 * VmRSS); null once the process is gone. statm, not status: it is read every
 * 100 ms for every process of a target, from the load generator's core, and
 * costs a third as much (17 processes: 0.3 ms against 1 ms).
 */
export function rssBytes(pid: number): number | null {
  try {
    // size resident shared text lib data dt, in pages
    const resident = Number(readFileSync(`/proc/${pid}/statm`, 'latin1').split(' ', 2)[1]);
    return Number.isFinite(resident) ? resident * PAGE_SIZE : null;
  } catch {
    return null;
  }
}

/**
 * Proportional set size in bytes (smaps_rollup Pss): a process's private pages
 * plus its share of pages it maps together with others. Summed over a group
 * of processes (a PostgreSQL server and its backends share their buffers) it
 * is what the group holds, where summed RSS would count shared pages once per
 * process. Null once the process is gone or where smaps_rollup is missing.
 * Costly: the kernel walks the process's page tables (~0.65 ms for a worker
 * here, 11 ms for all 17 processes of a one-worker gateway), so a job reads
 * one process's per sample, not all of them (measure.ts).
 */
export function pssBytes(pid: number): number | null {
  try {
    const m = /\nPss:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'latin1'));
    return m === null ? null : Number(m[1]) * 1024;
  } catch {
    return null;
  }
}

/**
 * CPU time (ms) all processes spent (user + system) plus the hypervisor's steal. Interrupt and
 * softirq time are left out: loopback networking is accounted there, for no process, and most
 * of it is this run's own traffic.
 */
export function machineBusyMs(): number {
  const line = readFileSync('/proc/stat', 'latin1').split('\n', 1)[0]!;
  const [, user, nice, system, , , , , steal] = line.trim().split(/\s+/).map(Number);
  return ((user! + nice! + system! + steal!) * 1000) / CLK_TCK;
}

/** The command name of a process ('' once it is gone). */
export function commOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'latin1').trim();
  } catch {
    return '';
  }
}

/** Direct children of `pid` (the cluster workers of a gateway's primary). */
export function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'latin1');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

const PAGE_SIZE = (() => {
  try {
    return Number(execFileSync('getconf', ['PAGESIZE'], { encoding: 'utf8' }).trim()) || 4096;
  } catch {
    return 4096;
  }
})();

const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();
