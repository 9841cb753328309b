// Microbenchmark: reserve + settle round trips through the ledger hosts, as a
// worker's Billing makes them: the embedded host over real cluster IPC and,
// in the same run, the Redis-streams host.
//
//   npx tsc -p . && node dist/bench/ledger-roundtrip.js [--workers 2] [--calls 5000] [--inflight 64] [--out file.json]
//   BENCH_DATABASE_URL=postgres://... to use that PostgreSQL instead of an embedded one on a temporary directory (the bench
//     works in a database of its own on that server, dropped at the end). The Redis host needs it.
//   BENCH_REDIS_URL (default redis://127.0.0.1:6379): the Redis host's phases run when it answers.
//
// Per host and flush_ms setting (100, the default, and 0, durable before the answer):
//   - floor: an empty request/reply between a worker and the primary (embedded), a PING to Redis (redis);
//   - one at a time: reserve, settle, and the pair, median and p99 in µs;
//   - in flight: every worker keeps --inflight pairs going; pairs per second over all workers.
// One organization for all calls: every command goes through the same actor, the worst case for serialization.
import cluster, { type Worker } from 'node:cluster';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import type { ApiKey } from '../src/auth/types.js';
import type { ChangeBus } from '../src/bus/bus.js';
import { createBilling } from '../src/billing/index.js';
import type { CatalogModel } from '../src/catalog/types.js';
import { PrimaryChannel, WorkerChannel } from '../src/ipc/channel.js';
import { loadConfig } from '../src/config/load.js';
import { createOrganization, updateOrganization } from '../src/organizations/store.js';
import { connectLedger, startLedgerHost } from '../src/ledger/index.js';
import { createLogger } from '../src/log/logger.js';
import { openEmbeddedStore } from '../src/store/embedded.js';
import { migrate } from '../src/store/migrate.js';
import { createPool } from '../src/store/pool.js';
import { Redis } from 'ioredis';
import pg from 'pg';
import { ping as redisAnswers } from '../test/helpers/redis-topology.js';

const { values: args } = parseArgs({
  options: { workers: { type: 'string', default: '2' }, calls: { type: 'string', default: '5000' }, inflight: { type: 'string', default: '64' }, out: { type: 'string' } },
});
const WORKERS = Number(args.workers);
const CALLS = Number(args.calls);
const INFLIGHT = Number(args.inflight);
const logger = createLogger('warn', cluster.isPrimary ? 'bench' : 'bench-worker');
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
type HostKind = 'embedded' | 'redis';

interface Dist {
  median: number;
  p99: number;
}
function dist(us: number[]): Dist {
  const s = [...us].sort((a, b) => a - b);
  const at = (q: number): number => Math.round(s[Math.min(s.length - 1, Math.floor(q * s.length))] * 10) / 10;
  return { median: at(0.5), p99: at(0.99) };
}
const micros = (from: bigint): number => Number(process.hrtime.bigint() - from) / 1000;

async function worker(): Promise<void> {
  const channel = new WorkerChannel();
  const orgId = process.env.BENCH_ORG!;
  const redisStore = process.env.BENCH_REDIS_STORE;
  const config = loadConfig({ LOG_LEVEL: 'warn', BILLING_FLUSH_MS: process.env.BENCH_FLUSH_MS, ...(redisStore ? { REDIS_URL, DATABASE_URL: redisStore } : {}) });
  const pool = createPool(process.env.BENCH_STORE_URL!, 2);
  const ledger = await connectLedger(config, channel, pool, logger);
  // The floor under each host: what one of its round trips costs with no ledger work at all.
  const redis = redisStore ? new Redis(REDIS_URL) : null;
  const floor = redis !== null ? () => redis.ping() : () => channel.request('bench:ping');
  const billing = createBilling({ ledger, logger });
  const key: ApiKey = { id: randomUUID(), orgId, name: 'bench', prefix: 'x', last4: 'x', version: 1, scope: null, binding: 'organization', funding: 'balance', expiresAt: null, quotaPerMinute: null };
  const model = {
    modelId: randomUUID(),
    price: { inputPerMtok: 2_500_000, cachedInputPerMtok: 1_250_000, outputPerMtok: 10_000_000, imageUnit: 0 },
  } as CatalogModel;
  const bound = { inputTokens: 800, outputTokens: 4096, imageUnits: 0 };
  const metered = { inputTokens: 700, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 300, imageUnits: 0, source: 'supplier' as const };
  let n = 0;
  const pair = async (): Promise<void> => {
    const hold = await billing.reserve(`req_${process.pid}_${++n}`, key, model, 'chat_completions', bound);
    await billing.settle(hold, metered, 'completed', { ttfbMs: 1, totalMs: 2 }, 'bench');
  };
  channel.on('bench:sequential', async () => {
    const ping: number[] = [];
    const reserve: number[] = [];
    const settle: number[] = [];
    const both: number[] = [];
    for (let i = 0; i < CALLS + 500; i++) {
      const t0 = process.hrtime.bigint();
      await floor();
      const p = micros(t0);
      const t1 = process.hrtime.bigint();
      const hold = await billing.reserve(`req_${process.pid}_${++n}`, key, model, 'chat_completions', bound);
      const r = micros(t1);
      const t2 = process.hrtime.bigint();
      await billing.settle(hold, metered, 'completed', { ttfbMs: 1, totalMs: 2 }, 'bench');
      const s = micros(t2);
      if (i < 500) continue; // warm-up
      ping.push(p);
      reserve.push(r);
      settle.push(s);
      both.push(r + s);
    }
    return { ping: dist(ping), reserve: dist(reserve), settle: dist(settle), pair: dist(both) };
  });
  channel.on('bench:concurrent', async () => {
    const total = CALLS * 4;
    let started = 0;
    const t0 = process.hrtime.bigint();
    const lane = async (): Promise<void> => {
      while (started < total) {
        started++;
        await pair();
      }
    };
    await Promise.all(Array.from({ length: INFLIGHT }, lane));
    return { pairs: total, seconds: micros(t0) / 1e6 };
  });
  channel.send('bench:ready');
}

async function phase(kind: HostKind, flushMs: number, orgId: string, storeUrl: string, pool: ReturnType<typeof createPool>): Promise<Record<string, unknown>> {
  const redisEnv = kind === 'redis' ? { REDIS_URL, DATABASE_URL: storeUrl } : {};
  const config = loadConfig({ LOG_LEVEL: 'warn', BILLING_FLUSH_MS: String(flushMs), ...redisEnv });
  const channel = new PrimaryChannel();
  const bus: ChangeBus = { publish: async () => {}, subscribe: () => {}, close: async () => {} };
  const host = await startLedgerHost(config, { pool, channel, bus, logger });
  await host.ready();
  channel.on('bench:ping', () => 1);
  let ready = 0;
  const allReady = new Promise<void>((resolve) => channel.on('bench:ready', () => ++ready === WORKERS && resolve()));
  const workers: Worker[] = [];
  for (let i = 0; i < WORKERS; i++) {
    const w = cluster.fork({ BENCH_ORG: orgId, BENCH_FLUSH_MS: String(flushMs), BENCH_REDIS_STORE: kind === 'redis' ? storeUrl : '', BENCH_STORE_URL: storeUrl, ...host.workerEnv });
    channel.attach(w);
    workers.push(w);
  }
  await allReady;
  // One at a time, on one worker (the others idle): latency without queueing.
  const sequential = await channel.request(workers[0], 'bench:sequential', undefined, 600_000);
  const t0 = process.hrtime.bigint();
  const lanes = await Promise.all(workers.map((w) => channel.request<{ pairs: number; seconds: number }>(w, 'bench:concurrent', undefined, 600_000)));
  const wall = micros(t0) / 1e6;
  const pairs = lanes.reduce((a, l) => a + l.pairs, 0);
  const stats = host.stats();
  for (const w of workers) w.kill();
  await host.close();
  return { host: kind, flush_ms: flushMs, floor: kind === 'redis' ? 'Redis PING' : 'IPC request/reply', sequential_us: sequential, concurrent: { workers: WORKERS, inflight_per_worker: INFLIGHT, pairs, pairs_per_second: Math.round(pairs / wall) }, backlog_at_end: stats.backlog };
}


/** A database of the bench's own on the server BENCH_DATABASE_URL names: its Redis keys (prefixed by the database name) are its own too. */
async function benchDatabase(adminUrl: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = 'tollgate_bench_' + randomUUID().replaceAll('-', '').slice(0, 12);
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = '/' + name;
  return {
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
      const r = new Redis(REDIS_URL);
      const keys = await r.keys(`tollgate:${name}:*`).catch(() => [] as string[]);
      if (keys.length > 0) await r.del(...keys);
      r.disconnect();
    },
  };
}

async function primary(): Promise<void> {
  let dir: string | null = null;
  let url: string | null = null;
  let embedded = null;
  let own: { url: string; drop: () => Promise<void> } | null = null;
  if (process.env.BENCH_DATABASE_URL) {
    own = await benchDatabase(process.env.BENCH_DATABASE_URL);
    url = own.url;
  } else {
    dir = mkdtempSync(join(tmpdir(), 'tollgate-bench-'));
    embedded = await openEmbeddedStore(dir, { maxConnections: 32 });
    url = embedded.url;
  }
  const pool = createPool(url, 4);
  await migrate(pool);
  const orgId = randomUUID();
  await createOrganization(pool, orgId, 'bench', 900_000_000_000);
  await updateOrganization(pool, orgId, { quotaPerSecond: 1_000_000, quotaPerMinute: 60_000_000 });
  // The Redis host serves instances that share a PostgreSQL: it is measured only on one.
  const hosts: HostKind[] = own !== null && (await redisAnswers(REDIS_URL)) ? ['embedded', 'redis'] : ['embedded'];
  if (!hosts.includes('redis')) process.stderr.write(`bench: Redis host skipped (${own === null ? 'needs BENCH_DATABASE_URL' : `no Redis at ${REDIS_URL}`})\n`);
  const results = [];
  for (const kind of hosts) for (const flushMs of [100, 0]) results.push(await phase(kind, flushMs, orgId, url, pool));
  const report = {
    bench: 'ledger-roundtrip',
    store: embedded !== null ? 'embedded' : 'postgres',
    redis: hosts.includes('redis') ? REDIS_URL.replace(/\/\/[^@]*@/, '//') : null,
    node: process.version,
    cpus: (await import('node:os')).availableParallelism(),
    calls_per_sample: CALLS,
    results,
  };
  process.stdout.write(JSON.stringify(report, null, 2) + '\n');
  if (args.out !== undefined) {
    mkdirSync(dirname(args.out), { recursive: true });
    writeFileSync(args.out, JSON.stringify(report, null, 2) + '\n');
  }
  await pool.end();
  await own?.drop();
  await embedded?.close();
  if (dir !== null) rmSync(dir, { recursive: true, force: true });
  process.exit(0);
}

(cluster.isPrimary ? primary() : worker()).catch((err: Error) => {
  process.stderr.write(`bench failed: ${err.stack}\n`);
  process.exit(1);
});
