// One HTTP worker process: connects to the store, loads the catalog, serves
// the routing table on the shared port, drains on shutdown.
import { PgBus } from '../bus/pg-bus.js';
import { startAuth } from '../auth/index.js';
import { createBilling } from '../billing/index.js';
import { CatalogHolder } from '../catalog/holder.js';
import { keyConsoleRoutes } from '../console/keys-routes.js';
import { orgConsoleRoutes } from '../console/org-routes.js';
import type { Config } from '../config/types.js';
import { connectLedger } from '../ledger/index.js';
import { createLogger, flushLogger } from '../log/logger.js';
import { Metrics } from '../metrics/registry.js';
import type { Route } from '../server/context.js';
import { HttpServer } from '../server/http-server.js';
import { opsRoutes } from '../server/ops-routes.js';
import { assertNativeUws } from '../server/uws.js';
import { createPool } from '../store/pool.js';
import type { PipelineDeps } from '../pipeline/deps.js';
import { modelRoute } from '../pipeline/run.js';
import { SupplierDispatcher } from '../suppliers/dispatch.js';
import { chatCodec } from '../surfaces/chat/codec.js';
import { modelsRoute } from '../surfaces/models/route.js';
import { OffloadPool } from '../offload/pool.js';
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

  const bus = new PgBus(storeUrl, pool, logger);
  await bus.start();

  const catalog = new CatalogHolder(pool, simulatorUrl, config.catalog.refresh_ms, logger);
  await catalog.start();
  bus.subscribe('catalog', () => void catalog.refreshNow());

  // Keys: the in-memory live-key index, kept in sync by the bus and the change log; GET /v1/key.
  const auth = await startAuth({ pool, bus, metrics, logger });

  // Billing: reserve before the supplier, settle after; the ledger actors are reached through `ledger`.
  const ledger = connectLedger(config, channel);
  const billing = createBilling({ ledger, logger, metrics });

  // Model calls: one generic pipeline over every surface codec.
  const sc = config.suppliers;
  const suppliers = new SupplierDispatcher(
    {
      connectTimeoutMs: sc.connect_timeout_ms,
      headersTimeoutMs: sc.headers_timeout_ms,
      bodyTimeoutMs: sc.body_timeout_ms,
      connectionsPerOrigin: sc.connections_per_origin,
      breakerThreshold: sc.breaker_threshold,
      breakerCooldownMs: sc.breaker_cooldown_ms,
    },
    logger,
    metrics,
  );
  const offload = new OffloadPool(config.pools.piscina_min_threads, config.pools.piscina_max_threads);
  const pipeline: PipelineDeps = {
    authenticator: auth.authenticator,
    catalog,
    billing,
    suppliers,
    offload,
    offloadBodyBytes: config.pools.offload_body_bytes,
    logger,
  };

  const routes: Route[] = [
    ...opsRoutes({ ready: () => catalog.ready, metricsText: workerMetrics(channel, metrics) }),
    modelsRoute(catalog),
    modelRoute(chatCodec, pipeline),
    ...auth.routes,
    // With no ADMIN_TOKEN the console is not registered at all: every /console path is a 404.
    ...(config.admin_token !== null ? keyConsoleRoutes({ pool, bus, adminToken: config.admin_token, catchUp: auth.catchUp }) : []),
    ...(config.admin_token !== null ? orgConsoleRoutes({ pool, ledger, adminToken: config.admin_token }) : []),
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
      auth.stop();
      await suppliers.close();
      await offload.close();
      await ledger.close();
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
