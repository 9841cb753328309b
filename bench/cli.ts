// Command-line flags of `npm run bench -- …` and the settings each mode implies.
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { packageRoot } from '../src/config/paths.js';
import type { LoadClient } from './loadgen-job.js';
import { MIXED_SCENARIOS, SCENARIOS, scenarioById } from './scenarios.js';

/**
 * The quick mode's scenarios: those the goals read (goals.ts: unary, unary-1conn,
 * stream, stream-delay5), and two the memory goals must see: body-100k (it
 * starts the worker's pool thread) and responses-unary (the responses surface's
 * modules, ~15 MB of a worker). The others (new connections, 32 streams, the
 * responses stream, the tokenizer) are in --full, or named with --scenarios.
 * With 2 rounds of 1 s and waits for a quiet machine capped at 0.5 s,
 * `npm run bench` stays under two minutes on a 2-vCPU VM, also when that VM is
 * busy with other work (issue 34 item 10; docs/performance.md has the timings).
 */
export const QUICK_SCENARIOS = ['unary', 'unary-1conn', 'stream', 'stream-delay5', 'body-100k', 'responses-unary'];

export const USAGE = `npm run bench -- [flags]          (builds, then runs node dist/bench/run.js)

Modes
  (default)              quick: the scenarios the goals read (${QUICK_SCENARIOS.join(', ')}),
                         2 interleaved rounds of 1 s per target, at most 0.5 s waiting for a quiet machine before
                         each; ends with the goals against their limits, pass or miss (< 2 min, the build included)
  --full                 every scenario (quick's, new connections, 32 streams, the responses stream, the tokenizer),
                         4 rounds of 4 s (< 10 min)
  --sweep                Tollgate over WORKERS × PISCINA_MAX_THREADS × connections; prints the best setting
  --mixed                small chat calls beside count_tokens of 1 MB and beside 128 × 3072 float embeddings,
                         and embeddings alone (targets tollgate,tollgate-inline unless --targets says otherwise)
Targets (all in the same run, interleaved; the order changes each round so that over N rounds for N targets,
  2N when N is odd, each takes every slot and follows every other equally often)
  --targets LIST         built-in targets to run (default direct,bare,tollgate): direct, bare, tollgate,
                         tollgate-inline (supplier replies decoded on the event loop: the pool off for embeddings)
  --tollgate-from NAME=DIR  another build's Tollgate (DIR: a checkout with dist/ built), started like tollgate
  --variant NAME:K=V,…   another Tollgate of this build with these environment settings, e.g. nice0:PISCINA_NICE=0;
                         NODE_ARGS='--a --b' gives node flags to its primary and workers (sgc:NODE_ARGS=--single-threaded-gc)
  --target NAME=URL      another gateway (its base URL; the scenario path /v1/chat/completions is appended)
  --header 'K: V'        a header for the --target before it (repeatable), e.g. 'Authorization: Bearer …'
  --target-pid NAME=PID  that gateway's process, so its CPU and memory can be reported
  --database-url URL     also run a Tollgate on this PostgreSQL (target tollgate-ext)
  --redis-url URL        …and/or with its ledger on this Redis
  --redis-sentinel URL   also run a Tollgate on --database-url with its ledger on this Sentinel deployment
                         (redis-sentinel://host:port,…/<master>; target tollgate-sentinel, its own organization),
                         so CPU per call on Sentinel and on the single Redis of --redis-url compare in one run
  --redis-cluster URL    also run a Tollgate on --database-url with its ledger on this Redis Cluster
                         (redis-cluster://host:port,…, seed nodes; target tollgate-cluster, its own organization),
                         so CPU per call on Cluster and on the single Redis of --redis-url compare in one run
Settings
  --scenarios LIST       subset of: ${SCENARIOS.map((s) => s.id).join(', ')}
  --rounds N  --slot-ms MS  --warmup-ms MS (unrecorded, per job)  --warm-target-ms MS (per target, once)
  --quiet-max-ms MS      the longest wait for a quiet machine before each job (quick 500, otherwise 5000 ms)
  --workers N            Tollgate WORKERS (default 1)   --threads N   PISCINA_MAX_THREADS (default 1)
  --sweep-workers LIST   default 1, 2, 4, 8 … up to the gateway's CPUs (at least 1,2)
  --sweep-threads 1,2  --sweep-connections 4,32,128  --sweep-scenarios unary,stream,body-100k
  --gateway-cpus 0  --load-cpus 1   (taskset lists)   --no-pin   run unpinned
  --load-procs N         load generator processes sharing each job's connections (default 1), --sim-procs N
                         simulator processes on one port (default 1): a load that one core cannot send or answer
  --client raw           the load generator's keep-alive calls without streams on a lean client (default undici:
                         ~29 µs of client CPU per call here, raw ~20, mostly system calls), e.g. for a sweep over many workers
  --profile              also CPU-profile a Tollgate worker under the unary scenario and summarise it (PROFILE_TOP=N: its N top functions, default 15)
  --profile-scenario ID  …under this scenario instead (e.g. embeddings: what a large reply costs the event loop)
  --profile-ext          …a Tollgate on the given --database-url / --redis-url instead (tollgate-ext is stopped first: they would share its shards)
  --micro                also run the micro-benchmarks (bench/ledger-roundtrip.ts, bench/micro/prepare.ts)
  --ports FROM-TO        every port the bench opens (targets, simulator, proxies) from this range, e.g. 19000-19099
  --out DIR              where the JSON and HTML reports go (default bench/results)`;

export type Mode = 'quick' | 'full' | 'sweep';


export interface ExtraTargetSpec {
  name: string;
  url: string;
  headers: Record<string, string>;
  pids: number[];
}

/** A Tollgate started beside the built-in one: another build (`root`) and/or other settings (`env`). */
export interface TollgateVariant {
  name: string;
  root?: string;
  env: Record<string, string>;
  /** Node flags for its processes (the workers inherit the primary's). */
  nodeArgs?: string[];
}

/** Built-in variants, named in --targets. */
export const BUILTIN_VARIANTS: Record<string, Omit<TollgateVariant, 'name'>> = {
  'tollgate-inline': { env: { TOLLGATE_BENCH_EMBEDDINGS_INLINE: '1' } },
};

export interface Options {
  mode: Mode;
  rounds: number;
  slotMs: number;
  warmupMs: number;
  /** Unrecorded load on each target before the first scenario (JIT, pools, connections). */
  warmTargetMs: number;
  /** The longest wait for a quiet machine before each job (measure.ts awaitQuiet). */
  quietMaxMs: number;
  scenarios: string[];
  builtins: Set<string>;
  /** More Tollgates to start (tollgate-inline, --tollgate-from, --variant). */
  variants: TollgateVariant[];
  extras: ExtraTargetSpec[];
  databaseUrl?: string;
  redisUrl?: string;
  /** A redis-sentinel:// URL: target tollgate-sentinel, on databaseUrl. */
  redisSentinel?: string;
  /** A redis-cluster:// URL: target tollgate-cluster, on databaseUrl. */
  redisCluster?: string;
  workers: number;
  threads: number;
  pin: boolean;
  gatewayCpus: string;
  loadCpus: string;
  /** Load generator processes per job (LoadGen), simulator processes on one port. */
  loadProcs: number;
  simProcs: number;
  client: LoadClient;
  out: string;
  /** --ports: the range every port comes from, or null for any free port. */
  ports: { from: number; to: number } | null;
  micro: boolean;
  profile: boolean;
  profileScenario: string;
  /** Profile a Tollgate on databaseUrl / redisUrl (the tollgate-ext set-up) rather than on the embedded default. */
  profileExt: boolean;
  sweep: { workers: number[]; threads: number[]; connections: number[]; scenarios: string[] };
}

const list = (s: string): string[] => s.split(',').map((x) => x.trim()).filter((x) => x !== '');
const ints = (s: string, flag: string): number[] =>
  list(s).map((x) => {
    const n = Number(x);
    if (!Number.isInteger(n) || n < 1) throw new Error(`${flag}: '${x}' is not a positive integer`);
    return n;
  });

export function parseOptions(argv: string[]): Options | null {
  const { values, tokens } = parseArgs({
    args: argv,
    tokens: true,
    options: {
      help: { type: 'boolean', short: 'h' },
      full: { type: 'boolean' },
      sweep: { type: 'boolean' },
      mixed: { type: 'boolean' },
      targets: { type: 'string' },
      'tollgate-from': { type: 'string', multiple: true },
      variant: { type: 'string', multiple: true },
      target: { type: 'string', multiple: true },
      header: { type: 'string', multiple: true },
      'target-pid': { type: 'string', multiple: true },
      'database-url': { type: 'string' },
      'redis-url': { type: 'string' },
      'redis-sentinel': { type: 'string' },
      'redis-cluster': { type: 'string' },
      scenarios: { type: 'string' },
      rounds: { type: 'string' },
      'slot-ms': { type: 'string' },
      'warmup-ms': { type: 'string' },
      'warm-target-ms': { type: 'string' },
      'quiet-max-ms': { type: 'string' },
      workers: { type: 'string', default: '1' },
      threads: { type: 'string', default: '1' },
      'sweep-workers': { type: 'string' },
      'sweep-threads': { type: 'string', default: '1,2' },
      'sweep-connections': { type: 'string', default: '4,32,128' },
      'sweep-scenarios': { type: 'string', default: 'unary,stream,body-100k' },
      'gateway-cpus': { type: 'string', default: '0' },
      'load-cpus': { type: 'string', default: '1' },
      'no-pin': { type: 'boolean' },
      'load-procs': { type: 'string', default: '1' },
      'sim-procs': { type: 'string', default: '1' },
      client: { type: 'string', default: 'undici' },
      profile: { type: 'boolean' },
      'profile-scenario': { type: 'string', default: 'unary' },
      'profile-ext': { type: 'boolean' },
      micro: { type: 'boolean' },
      out: { type: 'string', default: join(packageRoot, 'bench/results') },
      ports: { type: 'string' },
    },
  });
  if (values.help) return null;
  const mode: Mode = values.sweep ? 'sweep' : values.full ? 'full' : 'quick';
  // rounds, slot ms, warm-up ms per job, warm-up ms per target, longest quiet wait ms. --mixed keeps
  // 1.5 s slots: its goal is a p99 of calls paced at 400/s, which over 1 s would rest on 4 calls.
  const presets = { quick: [2, 1000, 250, 1000, 500], mixed: [2, 1500, 250, 1000, 5000], full: [4, 4000, 500, 3000, 5000], sweep: [2, 2000, 250, 1000, 5000] };
  const preset = presets[mode === 'quick' && values.mixed ? 'mixed' : mode];

  // --header belongs to the --target before it, so read the flags in order.
  const extras: ExtraTargetSpec[] = [];
  for (const t of tokens ?? []) {
    if (t.kind !== 'option' || t.value === undefined) continue;
    if (t.name === 'target') {
      const eq = t.value.indexOf('=');
      if (eq <= 0) throw new Error(`--target expects NAME=URL, got '${t.value}'`);
      extras.push({ name: t.value.slice(0, eq), url: t.value.slice(eq + 1), headers: {}, pids: [] });
    } else if (t.name === 'header') {
      const last = extras[extras.length - 1];
      const colon = t.value.indexOf(':');
      if (last === undefined || colon <= 0) throw new Error(`--header 'Name: value' must follow a --target`);
      last.headers[t.value.slice(0, colon).trim().toLowerCase()] = t.value.slice(colon + 1).trim();
    } else if (t.name === 'target-pid') {
      const [name, pid] = t.value.split('=');
      const spec = extras.find((e) => e.name === name);
      if (spec === undefined || !Number.isInteger(Number(pid))) throw new Error(`--target-pid NAME=PID must name a --target`);
      spec.pids.push(Number(pid));
    }
  }

  const scenarios =
    values.scenarios !== undefined
      ? list(values.scenarios)
      : values.mixed
        ? MIXED_SCENARIOS.map((s) => s.id)
        : mode === 'quick'
          ? QUICK_SCENARIOS
          : SCENARIOS.filter((s) => (mode === 'full' || !s.fullOnly) && !MIXED_SCENARIOS.includes(s)).map((s) => s.id);
  for (const id of scenarios) scenarioById(id);
  const sweepScenarios = list(values['sweep-scenarios']!);
  for (const id of sweepScenarios) scenarioById(id);
  const builtins = new Set(list(values.targets ?? (values.mixed ? 'tollgate,tollgate-inline' : 'direct,bare,tollgate')));
  const variants: TollgateVariant[] = [];
  for (const b of builtins) {
    if (BUILTIN_VARIANTS[b] !== undefined) variants.push({ name: b, ...BUILTIN_VARIANTS[b]! });
    else if (!['direct', 'bare', 'tollgate'].includes(b)) throw new Error(`--targets: unknown built-in target '${b}'`);
  }
  for (const spec of values['tollgate-from'] ?? []) {
    const eq = spec.indexOf('=');
    if (eq <= 0) throw new Error(`--tollgate-from expects NAME=DIR, got '${spec}'`);
    const root = spec.slice(eq + 1);
    if (!existsSync(join(root, 'dist/src/main.js'))) throw new Error(`--tollgate-from: ${root}/dist/src/main.js is missing: run npm run build in ${root}`);
    variants.push({ name: spec.slice(0, eq), root, env: {} });
  }
  for (const spec of values.variant ?? []) {
    const colon = spec.indexOf(':');
    // At the first '=' only: a value may hold one itself (NODE_OPTIONS=--max-semi-space-size=64).
    const pairs = colon <= 0 ? [] : list(spec.slice(colon + 1)).map((kv) => (kv.indexOf('=') < 0 ? [kv] : [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
    if (pairs.length === 0 || pairs.some((kv) => kv.length !== 2 || kv[0] === '')) throw new Error(`--variant expects NAME:KEY=VALUE[,KEY=VALUE…], got '${spec}'`);
    const { NODE_ARGS, ...env } = Object.fromEntries(pairs) as Record<string, string>;
    variants.push({ name: spec.slice(0, colon), env, ...(NODE_ARGS === undefined ? {} : { nodeArgs: NODE_ARGS.split(' ').filter((a) => a !== '') }) });
  }
  if (values['redis-sentinel'] !== undefined && (!values['redis-sentinel'].startsWith('redis-sentinel://') || values['database-url'] === undefined)) {
    throw new Error('--redis-sentinel expects a redis-sentinel://host:port[,host:port…]/<master> URL, and --database-url for its Tollgate');
  }
  if (values['redis-cluster'] !== undefined && (!values['redis-cluster'].startsWith('redis-cluster://') || values['database-url'] === undefined)) {
    throw new Error('--redis-cluster expects a redis-cluster://host:port[,host:port…] URL, and --database-url for its Tollgate');
  }
  if (values['profile-ext'] === true && values['database-url'] === undefined && values['redis-url'] === undefined) throw new Error('--profile-ext profiles the Tollgate of --database-url / --redis-url: give one');
  const num = (v: string | undefined, fallback: number, flag: string): number => (v === undefined ? fallback : ints(v, flag)[0]!);
  return {
    mode,
    rounds: num(values.rounds, preset[0]!, '--rounds'),
    slotMs: num(values['slot-ms'], preset[1]!, '--slot-ms'),
    warmupMs: values['warmup-ms'] === undefined ? preset[2]! : Number(values['warmup-ms']),
    warmTargetMs: values['warm-target-ms'] === undefined ? preset[3]! : Number(values['warm-target-ms']),
    quietMaxMs: values['quiet-max-ms'] === undefined ? preset[4]! : Number(values['quiet-max-ms']),
    scenarios,
    builtins,
    variants,
    extras,
    databaseUrl: values['database-url'],
    redisUrl: values['redis-url'],
    redisSentinel: values['redis-sentinel'],
    redisCluster: values['redis-cluster'],
    workers: num(values.workers, 1, '--workers'),
    threads: num(values.threads, 1, '--threads'),
    pin: !values['no-pin'],
    gatewayCpus: values['gateway-cpus']!,
    loadCpus: values['load-cpus']!,
    loadProcs: num(values['load-procs'], 1, '--load-procs'),
    simProcs: num(values['sim-procs'], 1, '--sim-procs'),
    client: loadClient(values.client!),
    out: values.out!,
    ports: values.ports === undefined ? null : portRange(values.ports),
    micro: values.micro === true,
    profile: values.profile === true,
    profileScenario: scenarioById(values['profile-scenario']!).id,
    profileExt: values['profile-ext'] === true,
    sweep: {
      workers: values['sweep-workers'] !== undefined ? ints(values['sweep-workers'], '--sweep-workers') : workerSteps(values['no-pin'] ? availableParallelism() : cpuCount(values['gateway-cpus']!)),
      threads: ints(values['sweep-threads']!, '--sweep-threads'),
      connections: ints(values['sweep-connections']!, '--sweep-connections'),
      scenarios: sweepScenarios,
    },
  };
}

function loadClient(text: string): LoadClient {
  if (text !== 'undici' && text !== 'raw') throw new Error(`--client expects undici or raw, got '${text}'`);
  return text;
}

/** "19000-19099" → {from, to}: ports above 1023 and at least 8 of them (a run opens a few per target). */
export function portRange(text: string): { from: number; to: number } {
  const m = /^(\d+)-(\d+)$/.exec(text);
  const [from, to] = m === null ? [NaN, NaN] : [Number(m[1]), Number(m[2])];
  if (!(from >= 1024 && to <= 65535 && to - from >= 7)) throw new Error(`--ports expects FROM-TO, 1024 ≤ FROM, TO ≤ 65535, at least 8 ports; got '${text}'`);
  return { from, to };
}

/** How many CPUs a taskset list names ("0", "0-13,15" → 15). */
export function cpuCount(list: string): number {
  let n = 0;
  for (const part of list.split(',')) {
    const [a, b] = part.split('-').map(Number);
    if (Number.isInteger(a)) n += b === undefined ? 1 : Number.isInteger(b) && b >= a! ? b - a! + 1 : 0;
  }
  return Math.max(1, n);
}

/** WORKERS for the sweep: 1, 2, 4, 8 … and the core count itself (at least 1 and 2: one core shared by two workers shows what switching costs). */
export function workerSteps(cores: number): number[] {
  const steps: number[] = [];
  for (let w = 1; w < Math.max(2, cores); w *= 2) steps.push(w);
  steps.push(Math.max(2, cores));
  return steps;
}
