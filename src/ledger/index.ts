// Choosing and starting the ledger host. Callers see only LedgerClient (in
// workers) and LedgerHost (in the primary); which transport carries the
// commands is decided here and nowhere else, the way piscina keeps its task
// queues swappable.
//
// Today there is one host, the embedded one (actors in the cluster primary,
// commands over cluster IPC). The Redis-streams host (issue 6) adds a branch
// on config.redis_url in both functions below: a RedisLedgerHost that feeds
// the same Ledger from shard streams, and a RedisLedgerClient for workers.
import type { ChangeBus } from '../bus/bus.js';
import type { PrimaryChannel, WorkerChannel } from '../cluster/ipc.js';
import type { Config } from '../config/types.js';
import type { Logger } from '../log/logger.js';
import type { Pool } from '../store/pool.js';
import { IpcLedgerClient, serveLedgerOverIpc } from './embedded-host.js';
import { Ledger, type LedgerSettings, type LedgerStats } from './ledger.js';
import type { LedgerClient } from './protocol.js';
import { PgLedgerStore } from './store.js';

export type { LedgerClient } from './protocol.js';
export { Ledger, type LedgerSettings } from './ledger.js';
export { LocalLedgerClient } from './local-client.js';
export { PgLedgerStore } from './store.js';

export interface LedgerHost {
  readonly kind: 'embedded';
  stats(): LedgerStats;
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
    holdLeaseMs: b.hold_lease_ms,
    holdMaxMs: b.hold_max_ms,
    quotaPerSecond: b.quota_per_second,
    quotaPerMinute: b.quota_per_minute,
  };
}

/** In the cluster primary, before the workers are forked. */
export function startLedgerHost(config: Config, deps: LedgerHostDeps): LedgerHost {
  const ledger = new Ledger(new PgLedgerStore(deps.pool), ledgerSettings(config), deps.logger);
  serveLedgerOverIpc(deps.channel, ledger);
  // Whoever edits an organization row may say so on the bus ('orgs', its id): the actor reloads at once instead of at the next reconcile.
  deps.bus.subscribe('orgs', (orgId) => void ledger.refresh(orgId).catch(() => {}));
  return { kind: 'embedded', stats: () => ledger.stats(), close: () => ledger.close() };
}

/** In a worker: the client of whichever host the primary runs. */
export function connectLedger(config: Config, channel: WorkerChannel): LedgerClient {
  return new IpcLedgerClient(channel, config.billing.hold_lease_ms);
}
