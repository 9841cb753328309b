// What the load generator can be pointed at: the simulator directly, the bare
// proxy, Tollgate (embedded default, or on DATABASE_URL/REDIS_URL), and any
// other gateway given on the command line. Each target knows its processes,
// so the runner can charge it the CPU and memory it uses.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { packageRoot } from '../src/config/paths.js';
import { childrenOf, commOf, freePort, Spawned } from './procs.js';

export type TargetKind = 'direct' | 'bare' | 'tollgate' | 'extra';

export interface ProcessRole {
  pid: number;
  /** "primary", "worker", "db", "proxy", "simulator", "process" */
  role: string;
  /** Also count the CPU of its children that exited during the job (a server's short-lived backends, autovacuum workers). */
  reaped?: boolean;
}

export interface Target {
  name: string;
  kind: TargetKind;
  origin: string;
  /** Put in front of the scenario's path (the simulator's instance, e.g. /alpha). */
  pathPrefix: string;
  headers: Record<string, string>;
  /** The processes whose CPU and memory are this target's, looked up before each job (workers restart). */
  processes(): ProcessRole[];
  /** The target's Prometheus text (Tollgate's operator listener), for the workers' event-loop delay (event-loop.ts); absent elsewhere. */
  metricsUrl?: string;
  /** Settings worth printing (workers, threads, store). */
  settings: Record<string, string | number>;
  stop(): Promise<void>;
}

const dist = (file: string): string => join(packageRoot, 'dist', file);

/**
 * The simulator: `processes` of them on one port (uWS listens with
 * SO_REUSEPORT, so the kernel spreads connections over them), for loads one
 * simulator core cannot answer. The bench's scenarios keep no state in the
 * simulator between calls, so which process answers does not matter.
 */
export async function startSimulator(cpus: string | null, processes = 1): Promise<{ url: string; procs: Spawned[] }> {
  const port = String(await freePort());
  const procs = Array.from({ length: processes }, () => new Spawned('simulator', [dist('src/simulator/main.js'), '--port', port, '--instances', 'alpha,beta,gamma'], { cpus }));
  const lines = await Promise.all(procs.map((p) => p.waitForLine((l) => typeof l.simulator === 'string', 30_000)));
  return { url: lines[0]!.simulator as string, procs };
}

export function directTarget(sim: { url: string; procs: Spawned[] }): Target {
  return {
    name: 'direct',
    kind: 'direct',
    origin: sim.url,
    pathPrefix: '/alpha',
    headers: {},
    processes: () => sim.procs.map((p) => ({ pid: p.pid, role: 'simulator' as const })),
    settings: {},
    stop: () => Promise.all(sim.procs.map((p) => p.stop())).then(() => {}),
  };
}

export async function startBare(simUrl: string, cpus: string | null): Promise<Target> {
  const proc = new Spawned('bare proxy', [dist('bench/bare-proxy.js'), '--port', String(await freePort()), '--upstream', `${simUrl}/alpha`], { cpus });
  const line = await proc.waitForLine((l) => typeof l.bare === 'string', 30_000);
  return {
    name: 'bare',
    kind: 'bare',
    origin: line.bare as string,
    pathPrefix: '',
    headers: {},
    processes: () => [{ pid: proc.pid, role: 'proxy' }],
    settings: {},
    stop: () => proc.stop(),
  };
}

export interface TollgateOptions {
  name: string;
  cpus: string | null;
  simUrl: string;
  workers: number;
  piscinaMaxThreads: number;
  databaseUrl?: string;
  redisUrl?: string;
  /** Node flags for the primary; cluster.fork passes them on to the workers (e.g. --cpu-prof, which NODE_OPTIONS refuses). */
  nodeArgs?: string[];
  /** Another build's checkout (its dist/ built): before/after in one run. Default: this one. */
  root?: string;
  /** More environment for the gateway (settings, bench switches such as TOLLGATE_BENCH_EMBEDDINGS_INLINE). */
  env?: Record<string, string>;
  /**
   * The most calls the run puts in progress at once: the bench's key may
   * have that many per worker (all of them may land on one), so the
   * gateway's own per-key cap (128 by default) refuses none of the load.
   */
  keyConcurrency?: number;
}

/** The gateway's default billing.max_concurrent_per_key (README, Settings). */
const DEFAULT_KEY_CONCURRENCY = 128;

export async function startTollgate(o: TollgateOptions): Promise<Target> {
  const port = await freePort();
  const adminToken = randomBytes(24).toString('hex');
  const opsPort = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-bench-'));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HOST: '127.0.0.1',
    PORT: String(port),
    WORKERS: String(o.workers),
    PISCINA_MAX_THREADS: String(o.piscinaMaxThreads),
    DATA_DIR: dataDir,
    SIMULATOR_URL: o.simUrl,
    ADMIN_TOKEN: adminToken,
    // A real deployment logs one line per request; so does the bench (to a pipe the runner drains).
    LOG_LEVEL: 'info',
    DRAIN_TIMEOUT_MS: '2000',
    // An operator listener of its own (a free port each: side-by-side targets must not contend), scraped around each job for the workers' event-loop delay.
    OPS_PORT: String(opsPort),
  };
  delete env.DATABASE_URL;
  delete env.REDIS_URL;
  delete env.TOLLGATE_CONFIG;
  if (o.databaseUrl) env.DATABASE_URL = o.databaseUrl;
  if (o.redisUrl) env.REDIS_URL = o.redisUrl;
  env.MAX_CONCURRENT_PER_KEY = String(Math.max(DEFAULT_KEY_CONCURRENCY, o.keyConcurrency ?? 0));
  Object.assign(env, o.env);
  const main = o.root === undefined ? dist('src/main.js') : join(o.root, 'dist/src/main.js');
  const proc = new Spawned(o.name, [...(o.nodeArgs ?? []), main], { cpus: o.cpus, env });
  // However the run ends (stopAll, Ctrl-C, a failed start), the data directory goes with the process.
  const removeData = (): void => rmSync(dataDir, { recursive: true, force: true });
  void proc.exited.then(removeData);
  const origin = `http://127.0.0.1:${port}`;
  try {
    await proc.waitForLine((l) => l.msg === 'listening', 120_000);
    const key = await provision(origin, adminToken);
    await untilAccepted(origin, key);
    return {
      name: o.name,
      kind: 'tollgate',
      origin,
      pathPrefix: '',
      headers: { authorization: `Bearer ${key}` },
      processes: () => tollgateProcesses(proc.pid),
      metricsUrl: `http://127.0.0.1:${opsPort}/metrics`,
      settings: {
        workers: o.workers,
        piscina_max_threads: o.piscinaMaxThreads,
        store: o.databaseUrl ? 'postgres' : 'embedded PostgreSQL',
        ledger: o.redisUrl ? (o.redisUrl.startsWith('redis-sentinel:') ? 'redis-sentinel' : o.redisUrl.startsWith('redis-cluster:') ? 'redis-cluster' : 'redis') : 'primary',
        max_concurrent_per_key: Number(env.MAX_CONCURRENT_PER_KEY),
        ...(o.root === undefined ? {} : { build: o.root }),
        ...o.env,
      },
      stop: () => proc.stop(),
    };
  } catch (err) {
    await proc.stop();
    throw err;
  }
}

/**
 * A Tollgate's processes by role: its primary, its HTTP workers and, on the
 * embedded default, the PostgreSQL server it started with every backend
 * (role `db`: the store's cost, which PGlite used to add to the primary's).
 */
function tollgateProcesses(primary: number): ProcessRole[] {
  const out: ProcessRole[] = [{ pid: primary, role: 'primary' }];
  for (const pid of childrenOf(primary)) {
    if (commOf(pid) !== 'postgres') out.push({ pid, role: 'worker' });
    else out.push({ pid, role: 'db', reaped: true }, ...childrenOf(pid).map((c) => ({ pid: c, role: 'db' })));
  }
  return out;
}

/** An organization with a balance no run can spend and quotas no run can hit, and one key. */
async function provision(origin: string, adminToken: string): Promise<string> {
  const call = async (method: string, path: string, body: unknown): Promise<Record<string, unknown>> => {
    const res = await fetch(`${origin}/console/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`console ${method} ${path} → ${res.status} ${text}`);
    return JSON.parse(text) as Record<string, unknown>;
  };
  const org = await call('POST', '/organizations', { name: 'bench', balance: '1000000000.00' });
  await call('PATCH', `/organizations/${org.id}`, { quota_per_second: 1_000_000, quota_per_minute: 60_000_000 });
  const key = await call('POST', `/organizations/${org.id}/keys`, { name: 'bench' });
  return key.secret as string;
}

/** A new key reaches every worker within ~250 ms; wait until a call with it succeeds. */
async function untilAccepted(origin: string, key: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  let last = '';
  while (Date.now() < deadline) {
    const res = await fetch(`${origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'nw-swift-1', messages: [{ role: 'user', content: 'ready? [sim:words=1]' }], max_tokens: 8 }),
    });
    last = `${res.status} ${await res.text()}`;
    if (res.status === 200) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`Tollgate never accepted the bench key: ${last}`);
}

/** --target name=URL [--header ...] [--target-pid name=PID]: another gateway in the same run. */
export function extraTarget(name: string, url: string, headers: Record<string, string>, pids: number[]): Target {
  const u = new URL(url);
  return {
    name,
    kind: 'extra',
    origin: u.origin,
    pathPrefix: u.pathname.replace(/\/$/, ''),
    headers,
    processes: () => pids.flatMap((pid) => [{ pid, role: 'process' }, ...childrenOf(pid).map((c) => ({ pid: c, role: 'child' }))]),
    settings: { url },
    stop: async () => {},
  };
}
