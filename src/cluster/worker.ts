// One HTTP worker process: connects to the store, loads the catalog, serves
// the routing table on the shared port, drains on shutdown.
import { PgBus } from '../bus/pg-bus.js';
import { startAuth } from '../auth/index.js';
import { createBilling } from '../billing/index.js';
import { CatalogHolder } from '../catalog/holder.js';
import { keyConsoleRoutes } from '../console/keys-routes.js';
import { orgConsoleRoutes } from '../console/org-routes.js';
import { sessionRoutes } from '../console/session-routes.js';
import { catalogConsoleRoutes } from '../console/catalog-routes.js';
import type { Config } from '../config/types.js';
import { connectLedger } from '../ledger/index.js';
import { createLogger, flushLogger } from '../log/logger.js';
import { Metrics } from '../metrics/registry.js';
import { loadTracer } from '../metrics/tracing.js';
import type { Route } from '../server/context.js';
import { HttpServer } from '../server/http-server.js';
import { opsRoutes } from '../server/ops-routes.js';
import { assertNativeUws } from '../server/uws.js';
import { createPool } from '../store/pool.js';
import type { PipelineDeps } from '../pipeline/deps.js';
import { KeySlots } from '../pipeline/key-slots.js';
import { LocalQuota } from '../pipeline/local-quota.js';
import { surfaceRoutes } from '../pipeline/routes.js';
import { SupplierDispatcher } from '../suppliers/dispatch.js';
import { ResponseOwnership } from '../surfaces/responses/ownership.js';
import { OffloadPool } from '../offload/pool.js';
import { webRoutes } from '../web/index.js';
import { WorkerChannel } from '../ipc/channel.js';
import { EventLoopWindow, loopMonitor } from '../metrics/event-loop.js';
import { answerMetricsSnapshots } from './metrics.js';
import { EXIT_CANNOT_LISTEN } from './exit-codes.js';

export async function runWorker(config: Config): Promise<void> {
  assertNativeUws();
  const logger = createLogger(config.log_level, 'worker');
  const storeUrl = process.env.TOLLGATE_STORE_URL!;
  const simulatorUrl = process.env.TOLLGATE_SIMULATOR_URL || null;
  const channel = new WorkerChannel();
  const metrics = new Metrics();
  // The event loop's delay over fixed windows, whoever scrapes (issue 33): never stopped, it lives as long as the worker.
  const loopWindow = new EventLoopWindow('worker');
  metrics.addGauges(() => loopWindow.gauges());
  const pool = createPool(storeUrl, config.pools.pg_max);

  const bus = new PgBus(storeUrl, pool, logger);
  await bus.start();

  const catalog = new CatalogHolder(pool, simulatorUrl, config.catalog.refresh_ms, logger);
  await catalog.start();
  bus.subscribe('catalog', () => void catalog.refreshNow());

  // Keys: the in-memory live-key index, kept in sync by the bus and the change log.
  const auth = await startAuth({ pool, bus, metrics, logger });
  channel.on('keys:catch-up', () => auth.catchUp());
  // Every worker of this instance, through the primary (see primary.ts); this worker alone if the primary cannot answer.
  const catchUpAllWorkers = (): Promise<void> => channel.request<void>('keys:sync', undefined, 3000).catch(() => auth.catchUp());

  // Billing: reserve before the supplier, settle after; the ledger actors are reached through `ledger`.
  const ledger = await connectLedger(config, channel, pool, logger);
  if (ledger.gauges !== undefined) metrics.addGauges(() => ledger.gauges!());
  const billing = createBilling({ ledger, logger, metrics, currency: config.billing.currency });

  // Model calls: one generic pipeline over every surface of the registry (surfaces/index.ts).
  const sc = config.suppliers;
  const suppliers = new SupplierDispatcher(
    {
      connectTimeoutMs: sc.connect_timeout_ms,
      headersTimeoutMs: sc.headers_timeout_ms,
      bodyTimeoutMs: sc.body_timeout_ms,
      connectionsPerOrigin: sc.connections_per_origin,
      breakerThreshold: sc.breaker_threshold,
      breakerCooldownMs: sc.breaker_cooldown_ms,
      credentialEnvAllow: sc.credential_env_allow,
      maxReplyBytes: sc.max_reply_bytes,
      maxEventBytes: sc.max_event_bytes,
    },
    logger,
    metrics,
  );
  const offload = new OffloadPool(
    config.pools.piscina_min_threads,
    config.pools.piscina_max_threads,
    config.http.max_json_depth,
    (err) => logger.error({ err: (err as Error)?.message }, 'worker thread failed outside a task'),
    config.pools.piscina_nice,
  );
  // Its warm thread (pools.piscina_min_threads) loads the task files and o200k beside the rest of the start, not before
  // listening; /readyz says ready only once it has (issue 34 item 9: the first count_tokens no longer waits 1–3 s for
  // the tokenizer). A warm-up that failed does not hold readiness back: the first task then loads what it needs.
  const warmFrom = performance.now();
  let poolSettled = false;
  void offload.warm.then((warm) => {
    poolSettled = true;
    if (warm) logger.info({ ms: Math.round(performance.now() - warmFrom) }, 'pool warm');
  });
  // Responses: which organization owns each response id (previous_response_id), cached per worker, written in batches.
  const rc = config.responses;
  const owners = new ResponseOwnership(pool, { maxEntries: rc.owner_cache_entries, maxAgeMs: rc.owner_cache_max_age_ms, flushMs: rc.owner_flush_ms }, logger);

  // Null when tracing.otlp_url is: OpenTelemetry is then never loaded.
  const tracer = await loadTracer(config.tracing);
  const pipeline: PipelineDeps = {
    authenticator: auth.authenticator,
    catalog,
    billing,
    suppliers,
    offload,
    offloadBodyBytes: config.pools.offload_body_bytes,
    stalledClientMs: config.http.stalled_client_ms,
    maxJsonDepth: config.http.max_json_depth,
    keySlots: new KeySlots(config.billing.max_concurrent_per_key),
    localQuota: new LocalQuota(config.billing.count_tokens_per_second, config.billing.count_tokens_per_minute),
    logger,
    metrics,
    tracer,
    services: { responseOwners: owners },
  };

  const consoleAuth = { adminToken: config.admin_token, pool, maxJsonDepth: config.http.max_json_depth };
  const routes: Route[] = [
    // Liveness and readiness stay here, where load balancers look; /metrics is the primary's (ops.host, ops.port).
    ...opsRoutes({ ready: () => catalog.ready && poolSettled }),
    ...surfaceRoutes(pipeline, catalog, auth.authenticator),
    ...webRoutes(catalog, config.billing.currency),
    // The console API opens to the admin token (none configured: a bearer gets 404) and to signed-in sessions.
    ...keyConsoleRoutes({ pool, auth: consoleAuth, catchUp: catchUpAllWorkers }),
    ...orgConsoleRoutes({ pool, ledger, auth: consoleAuth, logger }),
    ...catalogConsoleRoutes(consoleAuth, catalog, (id) => suppliers.circuitOpen(id)),
    ...sessionRoutes({ pool, auth: consoleAuth, sessionTtlMs: config.web.session_ttl_ms, limit: { maxFailures: config.web.sign_in_max_failures, windowMs: config.web.sign_in_window_ms }, cookieSecure: config.web.cookie_secure, trustedProxies: config.http.trusted_proxies }),
  ];
  const server = new HttpServer(routes, { host: config.host, port: config.port, maxBodyBytes: config.http.max_body_bytes, maxJsonDepth: config.http.max_json_depth, logger, metrics });
  const port = await server.listen().catch(async (err: Error) => {
    // The primary reads this exit code and stops the whole gateway (primary.ts), rather than restart into the same port.
    logger.error({ err: err.message }, 'cannot listen');
    await flushLogger(logger);
    process.exit(EXIT_CANNOT_LISTEN);
  });
  answerMetricsSnapshots(channel, metrics);
  // Requests are a worker's work: its event-loop monitor pauses while it has none (metrics/event-loop.ts).
  loopMonitor.pauseWhenIdle(() => server.inFlight === 0);

  let stopping: Promise<void> | null = null;
  const shutdown = (): Promise<void> =>
    (stopping ??= (async () => {
      const inflight = server.inFlight;
      const outcome = await server.drain(config.http.drain_timeout_ms);
      logger.info({ inflight, outcome }, 'worker drained');
      catalog.stop();
      auth.stop();
      await suppliers.close();
      await tracer?.shutdown();
      await offload.close();
      await ledger.close();
      await owners.close();
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
