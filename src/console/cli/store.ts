// The store the `tollgate` command works on, found the way an operator would
// expect: DATABASE_URL when set; else the embedded PostgreSQL of a gateway
// running on DATA_DIR (its address read from the server's postmaster.pid,
// its password from DATA_DIR); else that embedded store started by the
// command itself for its duration, under the same lock a gateway takes, so
// the two never run it at once. Edits are announced with NOTIFY either way.
import { existsSync } from 'node:fs';
import { PgBus } from '../../bus/pg-bus.js';
import { seedDemoCatalog } from '../../catalog/seed.js';
import type { Config } from '../../config/types.js';
import { createLogger } from '../../log/logger.js';
import { clusterPath, openEmbeddedStore, runningEmbeddedStore } from '../../store/embedded.js';
import { migrate } from '../../store/migrate.js';
import { createPool, type Pool } from '../../store/pool.js';
import type { CliStore } from './command.js';

function withBus(url: string, pool: Pool, where: string, close: () => Promise<void>): CliStore {
  // NOTIFY reaches every gateway process on this database at once (a catalog revision; key changes announce
  // themselves, from the store, migration 011); their polls are the fallback.
  const bus = new PgBus(url, pool, createLogger('silent', 'cli'));
  return { pool, publish: (topic, payload) => bus.publish(topic, payload), where, close };
}

export async function openCliStore(config: Config): Promise<CliStore> {
  if (config.database_url !== null) {
    const pool = createPool(config.database_url, 2);
    return withBus(config.database_url, pool, 'DATABASE_URL', () => pool.end());
  }
  const running = runningEmbeddedStore(config.data_dir);
  if (running !== null) {
    const pool = createPool(running.url, 2);
    return withBus(running.url, pool, `the store of the gateway running on ${config.data_dir} (pid ${running.pid})`, () => pool.end());
  }
  // Never create a store here: from the wrong directory, `./data` would be a
  // new, empty store and the operator's edits would silently go nowhere.
  if (!existsSync(clusterPath(config.data_dir))) {
    throw new Error(
      `no store found: DATABASE_URL is not set, no gateway is running on ${config.data_dir}, and that directory holds no embedded store ` +
        '(start the gateway once, or set DATA_DIR or DATABASE_URL)',
    );
  }
  const embedded = await openEmbeddedStore(config.data_dir, { maxConnections: 8 });
  const pool = createPool(embedded.url, 2);
  const close = async (): Promise<void> => {
    await pool.end().catch(() => {});
    await embedded.close();
  };
  try {
    // A store written by an older gateway is brought up to this code's schema, as a gateway start would.
    await migrate(pool);
    if (config.catalog.seed_demo) await seedDemoCatalog(pool);
  } catch (err) {
    await close();
    throw err;
  }
  return withBus(embedded.url, pool, `the data directory ${config.data_dir}`, close);
}
