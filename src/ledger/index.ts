// Choosing and starting the ledger host. Callers see only LedgerClient (in
// workers) and LedgerHost (in the primary); which transport carries the
// commands is decided here and nowhere else, the way piscina keeps its task
// queues swappable.
//
// Two hosts feed the same Ledger: the embedded one (actors in the cluster
// primary, commands over cluster IPC) and, with config.redis_url, the
// Redis-streams one (src/ledger/redis/: organizations sharded over streams,
// each shard owned by one instance's primary at a time, workers of every
// instance sending to them), so several instances share one ledger.
import cluster from 'node:cluster';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { ChangeBus } from '../bus/bus.js';
import type { PrimaryChannel, WorkerChannel } from '../ipc/channel.js';
import type { Config } from '../config/types.js';
import type { Logger } from '../log/logger.js';
import type { Pool } from '../store/pool.js';
import { readLeftBooks } from './books-file.js';
import { closeBooksDir, openBooksDir, writeGoneWriter } from './books-replay.js';
import { IpcLedgerClient, serveLedgerOverIpc } from './embedded-host.js';
import { Ledger, type LedgerSettings } from './ledger.js';
import type { LedgerStats } from './stats.js';
import type { LedgerClient } from './protocol.js';
// The Redis host's modules are imported only with REDIS_URL: ioredis alone is ~20 MB of every process's memory.
import type { ShardStats } from './redis/host.js';
import { RedisKeys, redisPrefix } from './redis/keys.js';
import { PgLedgerStore } from './store.js';

export type { LedgerClient } from './protocol.js';
export { Ledger, type LedgerSettings } from './ledger.js';
export { LocalLedgerClient } from './local-client.js';
export { PgLedgerStore } from './store.js';

export interface LedgerHost {
  readonly kind: 'embedded' | 'redis';
  /** What the primary passes to the workers it forks (the Redis host: this instance's id). */
  readonly workerEnv: Record<string, string>;
  /**
   * Resolves true once the host serves commands (Redis: every shard has an
   * owner, this instance's share held and started); false if `timeoutMs` ran out first.
   */
  ready(timeoutMs?: number): Promise<boolean>;
  /** The Redis host adds its shard counts. */
  stats(): LedgerStats & Partial<ShardStats>;
  /** Writes what is queued; call after the workers have stopped. */
  close(): Promise<void>;
}

export interface LedgerHostDeps {
  pool: Pool;
  channel: PrimaryChannel;
  bus: ChangeBus;
  logger: Logger;
}

export function ledgerSettings(config: Config): LedgerSettings {
  const b = config.billing;
  return {
    flushMs: b.flush_ms,
    journalMaxLagMs: b.journal_max_lag_ms,
    holdLeaseMs: b.hold_lease_ms,
    holdMaxMs: b.hold_max_ms,
    quotaPerSecond: b.quota_per_second,
    quotaPerMinute: b.quota_per_minute,
  };
}

/** The environment variable that carries the instance id from the primary to its workers. */
const INSTANCE_ENV = 'TOLLGATE_INSTANCE_ID';
/** Where workers keep their books' files (worker-books.ts), on either host. */
const BOOKS_DIR_ENV = 'TOLLGATE_BOOKS_DIR';

/** In the cluster primary, before the workers are forked. */
export async function startLedgerHost(config: Config, deps: LedgerHostDeps): Promise<LedgerHost> {
  // The workers' books' files (books-replay.ts): the same directory at every start, so that what a crash of the whole host left is written now.
  const booksDir = openBooksDir(config.data_dir);
  const closeBooks = (): void => {
    const { left } = closeBooksDir(booksDir);
    if (left > 0) deps.logger.error({ dir: booksDir, files: left }, 'ledger: workers\' books left unwritten; written at the next start');
  };
  if (config.redis_url !== null && config.database_url !== null) {
    const { RedisLedgerHost } = await import('./redis/host.js');
    // One id per instance: its consumer name, its lease values, the prefix of its workers' hold owners.
    const instanceId = `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
    const host = new RedisLedgerHost({
      url: config.redis_url,
      keys: new RedisKeys(redisPrefix(config.database_url), config.redis_url),
      instanceId,
      pool: deps.pool,
      settings: ledgerSettings(config),
      booksDir,
      bus: deps.bus,
      logger: deps.logger,
    });
    await host.leftAtStart();
    cluster.on('exit', (worker) => {
      if (worker.process.pid !== undefined) host.workerGone(worker.process.pid);
    });
    return {
      kind: 'redis',
      workerEnv: { [INSTANCE_ENV]: instanceId, [BOOKS_DIR_ENV]: booksDir },
      ready: (timeoutMs) => host.ready(timeoutMs),
      stats: () => host.stats(),
      close: async () => {
        await host.close();
        closeBooks();
      },
    };
  }
  const store = new PgLedgerStore(deps.pool);
  // Before any actor loads: the store then holds everything, and nobody counts a folded writer apart.
  for (const f of readLeftBooks(booksDir)) {
    const { calls } = await writeGoneWriter(store, f);
    if (calls > 0) deps.logger.warn({ writer: f.writer, calls }, 'ledger: settlements a crash left in a worker\'s books written at start');
  }
  const ledger = new Ledger(store, ledgerSettings(config), deps.logger);
  serveLedgerOverIpc(deps.channel, ledger, booksDir, deps.logger);
  // Whoever edits an organization row may say so on the bus ('orgs', its id): the actor reloads at once instead of at the next reconcile.
  deps.bus.subscribe('orgs', (orgId) => void ledger.refresh(orgId).catch(() => {}));
  const close = async (): Promise<void> => {
    await ledger.close();
    closeBooks();
  };
  return { kind: 'embedded', workerEnv: { [BOOKS_DIR_ENV]: booksDir }, ready: async () => true, stats: () => ledger.stats(), close };
}

/** In a worker: the client of whichever host the primary runs. */
export async function connectLedger(config: Config, channel: WorkerChannel, pool: Pool, logger: Logger): Promise<LedgerClient> {
  if (config.redis_url !== null && config.database_url !== null) {
    const { RedisLedgerClient } = await import('./redis/client.js');
    const instanceId = process.env[INSTANCE_ENV] || `${hostname()}-${process.ppid}`;
    return new RedisLedgerClient({
      url: config.redis_url,
      keys: new RedisKeys(redisPrefix(config.database_url), config.redis_url),
      owner: `${instanceId}/${process.pid}`,
      holdLeaseMs: config.billing.hold_lease_ms,
      holdMaxMs: config.billing.hold_max_ms,
      flushMs: config.billing.flush_ms,
      allotmentCalls: config.billing.allotment_calls,
      databaseUrl: config.database_url,
      journalMaxLagMs: config.billing.journal_max_lag_ms,
      booksDir: booksDirOfWorker(),
      logger,
    });
  }
  const booksDir = booksDirOfWorker();
  return new IpcLedgerClient(channel, {
    holdLeaseMs: config.billing.hold_lease_ms,
    allotmentCalls: config.billing.allotment_calls,
    flushMs: config.billing.flush_ms,
    journalMaxLagMs: config.billing.journal_max_lag_ms,
    store: new PgLedgerStore(pool),
    booksDir,
    logger,
  });
}

function booksDirOfWorker(): string {
  const dir = process.env[BOOKS_DIR_ENV];
  if (dir === undefined || dir === '') throw new Error(`${BOOKS_DIR_ENV} is not set: a worker is started by its primary`);
  return dir;
}
