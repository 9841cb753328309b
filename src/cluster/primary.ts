// The cluster primary: owns the store (in the embedded default it starts a
// PostgreSQL server under data_dir and stops it last), applies migrations,
// seeds the demo catalog, starts the simulator supplier, forks one HTTP worker
// per core and restarts any that dies, and on SIGTERM/SIGINT (or when the npm
// process that started it goes away) drains the workers and exits 0.
import cluster, { type Worker } from 'node:cluster';
import v8 from 'node:v8';
import { PgBus } from '../bus/pg-bus.js';
import { seedDemoCatalog } from '../catalog/seed.js';
import { scheduleTypicalRequests } from '../catalog/typical.js';
import { createDemoOrganization, demoBanner } from '../console/demo.js';
import type { Config } from '../config/types.js';
import { startLedgerHost } from '../ledger/index.js';
import { createLogger, flushLogger } from '../log/logger.js';
import { Metrics } from '../metrics/registry.js';
import { assertNativeUws } from '../server/uws.js';
import { openEmbeddedStore, type EmbeddedStore } from '../store/embedded.js';
import { migrate } from '../store/migrate.js';
import { createPool } from '../store/pool.js';
import type { Simulator } from '../simulator/index.js';
import { PrimaryChannel } from '../ipc/channel.js';
import { EXIT_CANNOT_LISTEN } from './exit-codes.js';
import { primaryHeapFlags, workerHeapFlags } from './heap-flags.js';
import { startOpsServer } from '../server/ops-server.js';
import { loopMonitor } from '../metrics/event-loop.js';
import { instanceMetrics, watchLedger } from './metrics.js';

/** How long the start waits for the ledger host: past a lease (2 s) and a lease round, for a dead instance's entry to go. */
const LEDGER_READY_WAIT_MS = 5000;
/** A worker that dies sooner than this after its start counts towards a crash loop. */
const EARLY_DEATH_MS = 5000;

export async function runPrimary(config: Config): Promise<void> {
  assertNativeUws();
  for (const flag of primaryHeapFlags(config.memory)) v8.setFlagsFromString(flag);
  const logger = createLogger(config.log_level, 'primary');
  const started = performance.now();
  // GET /metrics on its own address (loopback by default), never the API port: it shows every organization's held
  // amount. Bound first, so that a port already taken stops the start before anything else is started.
  let scrape: () => Promise<string> = () => Promise.reject(new Error('the instance is still starting'));
  const ops = await startOpsServer({ ...config.ops, metricsText: () => scrape(), onError: (err) => logger.warn({ err: (err as Error)?.message }, 'metrics scrape failed') });
  const opsAddress = ops === null ? null : `${config.ops.host}:${ops.port}`;

  let embedded: EmbeddedStore | null = null;
  let storeUrl = config.database_url;
  if (storeUrl === null) {
    // Every worker's pool and bus connection, this process's, and room for `tollgate` commands.
    embedded = await openEmbeddedStore(config.data_dir, { maxConnections: config.workers * (config.pools.pg_max + 1) + 16 });
    storeUrl = embedded.url;
    if (embedded.recovered !== null) logger.warn({ dataDir: config.data_dir }, `embedded store: ${embedded.recovered}`);
    logger.info({ postgresPid: embedded.pid, dataDir: config.data_dir, created: embedded.created, ms: Math.round(performance.now() - started) }, 'embedded store: PostgreSQL started');
  }
  try {
    await serve(config, logger, started, embedded, storeUrl, opsAddress, (instance) => (scrape = instance));
  } catch (err) {
    // A start that fails after the embedded server came up (the simulator's port taken, say) stops it and frees
    // data_dir's lock, so nothing is left behind for the next start.
    await embedded?.close().catch(() => {});
    throw err;
  }
}

async function serve(
  config: Config,
  logger: ReturnType<typeof createLogger>,
  started: number,
  embedded: EmbeddedStore | null,
  storeUrl: string,
  opsAddress: string | null,
  serveMetrics: (scrape: () => Promise<string>) => void,
): Promise<void> {
  const pool = createPool(storeUrl, 4);
  const applied = await migrate(pool);
  const seeded = config.catalog.seed_demo ? await seedDemoCatalog(pool) : false;
  // First start of the embedded default: a demo organization and key, the key printed once (never logged).
  const demo = embedded !== null ? await createDemoOrganization(pool, config.billing.demo_balance) : null;
  if (demo !== null) process.stdout.write(demoBanner(demo));

  let simulator: Simulator | null = null;
  let simulatorUrl = config.simulator.url;
  if (simulatorUrl === null && config.simulator.enabled) {
    // Imported only when it runs here: with its tokenizer it is ~24 MB of the primary's memory.
    const { startSimulator } = await import('../simulator/index.js');
    simulator = await startSimulator({ host: '127.0.0.1', port: config.simulator.port, instances: config.simulator.instances });
    simulatorUrl = simulator.url;
  }

  const channel = new PrimaryChannel();
  const bus = new PgBus(storeUrl, pool, logger);
  await bus.start();
  const metrics = new Metrics('primary');
  metrics.count('worker_restarts', 0);
  // The primary's work is its ledger host's commands, which announce themselves: its event-loop monitor pauses while
  // none come (metrics/event-loop.ts).
  loopMonitor.pauseWhenIdle(() => true);
  // A key created through the console must work on every worker as soon as its creation answers, not only on the
  // worker that created it (NOTIFY reaches the others a few milliseconds later): that worker asks here, and every
  // worker catches up with the key change log before the answer goes out.
  channel.on('keys:sync', async () => {
    await Promise.allSettled(channel.workers().map((w) => channel.request(w, 'keys:catch-up', undefined, 2000)));
  });
  const stopTypical = scheduleTypicalRequests(pool, bus, config.catalog.typical_refresh_ms, config.catalog.typical_window_days, logger);
  // The organizations' ledger actors live here: all of them (embedded host, workers reach them over IPC), or
  // with REDIS_URL the shards this instance owns (workers of every instance reach them over Redis streams).
  const ledgerHost = await startLedgerHost(config, { pool, channel, bus, logger });
  watchLedger(metrics, ledgerHost);
  serveMetrics(instanceMetrics(channel, metrics));
  // Workers start once the ledger serves (Redis: every shard has an owner), so their first calls are not refused;
  // bounded, so an instance still starts (and answers its model list) while Redis is away.
  if (!(await ledgerHost.ready(LEDGER_READY_WAIT_MS))) logger.warn({ waitedMs: LEDGER_READY_WAIT_MS }, 'ledger not ready: model calls answer 503 until it is');

  let shuttingDown = false;
  const startedAt = new Map<number, number>();
  let earlyDeaths = 0;
  const env = { TOLLGATE_STORE_URL: storeUrl, TOLLGATE_SIMULATOR_URL: simulatorUrl ?? '', ...ledgerHost.workerEnv };
  // V8's heap flags are fixed when a process starts: the workers get them on their command line (their pool threads
  // share the process's flags). The primary keeps the node flags it was started with, and sets its old generation's growth on itself (primaryHeapFlags, above).
  cluster.setupPrimary({ execArgv: [...process.execArgv, ...workerHeapFlags(config.memory)] });
  const fork = (): Worker => {
    const worker = cluster.fork(env);
    startedAt.set(worker.id, performance.now());
    channel.attach(worker);
    return worker;
  };

  const readyPorts: number[] = [];
  const allReady = new Promise<void>((resolve) => {
    channel.on('ready', (m: { port: number }) => {
      readyPorts.push(m.port);
      if (readyPorts.length === config.workers) resolve();
    });
  });

  const shutdown = async (signal: string, exitCode = 0): Promise<void> => {
    if (shuttingDown) return;
    shuttingDown = true;
    logger.info({ signal }, 'shutting down: draining workers');
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);
    const exited = Promise.all(workers.map((w) => new Promise<void>((resolve) => (w.isDead() ? resolve() : w.once('exit', () => resolve())))));
    channel.broadcast('shutdown');
    const deadline = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), config.http.drain_timeout_ms + 3000).unref());
    if ((await Promise.race([exited, deadline])) === 'timeout') {
      logger.warn('workers did not exit in time; killing them');
      for (const w of workers) w.process.kill('SIGKILL');
    }
    // After the workers: their last settlements are in; write what is queued before the store closes.
    await ledgerHost.close();
    stopTypical();
    await bus.close();
    await simulator?.close();
    await pool.end().catch(() => {});
    await embedded?.close();
    logger.info('stopped');
    await flushLogger(logger);
    process.exit(exitCode);
  };
  cluster.on('exit', (worker, code, signal) => {
    if (shuttingDown) return;
    if (code === EXIT_CANNOT_LISTEN) {
      // One clear line, no stack, no restart loop: the operator frees the port or sets PORT/HOST.
      process.stderr.write(`tollgate: cannot listen on ${config.host}:${config.port} (the port is in use, or the address is not this machine's); set PORT or HOST\n`);
      logger.error({ host: config.host, port: config.port }, 'cannot listen; stopping');
      void shutdown('cannot listen', 1);
      return;
    }
    const lived = performance.now() - (startedAt.get(worker.id) ?? 0);
    earlyDeaths = lived < EARLY_DEATH_MS ? earlyDeaths + 1 : 0;
    const delay = Math.min(30_000, earlyDeaths === 0 ? 0 : 250 * 2 ** Math.min(earlyDeaths, 7));
    logger.warn({ worker: worker.process.pid, code, signal, restartInMs: delay }, 'worker died; starting a replacement');
    metrics.count('worker_restarts');
    setTimeout(() => {
      if (!shuttingDown) fork();
    }, delay);
  });
  for (let i = 0; i < config.workers; i++) fork();
  await allReady;
  logger.info(
    { port: readyPorts[0], ops: opsAddress, workers: config.workers, store: embedded ? 'embedded' : 'postgres', simulator: simulatorUrl, migrations: applied, seeded, ms: Math.round(performance.now() - started) },
    'listening',
  );

  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
  void embedded?.exited.then(() => {
    if (shuttingDown) return;
    logger.error({ dataDir: config.data_dir }, 'embedded store: PostgreSQL exited on its own; stopping (see postgres.log in the data directory)');
    void shutdown('store exited', 1);
  });
  watchNpmParent(() => void shutdown('parent exited'));
}

/**
 * Started by `npm start`, npm is what the operator stops: if it goes away
 * (killed, even with -9, so it could not pass the signal on), stop too rather
 * than keep serving as an orphan. npm passes SIGTERM and SIGINT on to its
 * child; this covers the rest.
 */
function watchNpmParent(stop: () => void): void {
  if (process.env.npm_lifecycle_event === undefined) return;
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) stop();
  }, 500).unref();
}
