// One HTTP worker process: connects to the store, loads the catalog, serves
// the routing table on the shared port, drains on shutdown.
import type { ChangeBus } from '../bus/bus.js';
import { WorkerIpcBus } from '../bus/ipc-bus.js';
import { PgBus } from '../bus/pg-bus.js';
import { CatalogHolder } from '../catalog/holder.js';
import type { Config } from '../config/types.js';
import { createLogger, flushLogger } from '../log/logger.js';
import { Metrics } from '../metrics/registry.js';
import type { Route } from '../server/context.js';
import { HttpServer } from '../server/http-server.js';
import { opsRoutes } from '../server/ops-routes.js';
import { assertNativeUws } from '../server/uws.js';
import { createPool } from '../store/pool.js';
import { modelsRoute } from '../surfaces/models/route.js';
import { WorkerChannel } from './ipc.js';
import { workerMetrics } from './metrics.js';

export async function runWorker(config: Config): Promise<void> {
  assertNativeUws();
  const logger = createLogger(config.log_level, 'worker');
  const storeUrl = process.env.TOLLGATE_STORE_URL!;
  const simulatorUrl = process.env.TOLLGATE_SIMULATOR_URL || null;
  const channel = new WorkerChannel();
  const metrics = new Metrics();
  const pool = createPool(storeUrl, config.pools.pg_max);

  let bus: ChangeBus;
  if (config.database_url !== null) {
    const pgBus = new PgBus(storeUrl, pool, logger);
    await pgBus.start();
    bus = pgBus;
  } else {
    bus = new WorkerIpcBus(channel);
  }

  const catalog = new CatalogHolder(pool, simulatorUrl, config.catalog.refresh_ms, logger);
  await catalog.start();
  bus.subscribe('catalog', () => void catalog.refreshNow());

  const routes: Route[] = [
    ...opsRoutes({ ready: () => catalog.ready, metricsText: workerMetrics(channel, metrics) }),
    modelsRoute(catalog),
  ];
  const server = new HttpServer(routes, { host: config.host, port: config.port, maxBodyBytes: config.http.max_body_bytes, logger, metrics });
  const port = await server.listen();

  let stopping: Promise<void> | null = null;
  const shutdown = (): Promise<void> =>
    (stopping ??= (async () => {
      const inflight = server.inFlight;
      const outcome = await server.drain(config.http.drain_timeout_ms);
      logger.info({ inflight, outcome }, 'worker drained');
      catalog.stop();
      await bus.close();
      await pool.end().catch(() => {});
      await flushLogger(logger);
      process.exit(0);
    })());
  channel.on('shutdown', () => void shutdown());
  process.on('SIGTERM', () => void shutdown());
  process.on('SIGINT', () => void shutdown());
  process.on('disconnect', () => void shutdown());

  channel.send('ready', { port });
}
