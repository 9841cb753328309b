// The store the `tollgate` command works on, found the way an operator would
// expect: DATABASE_URL when set; else the embedded store of a gateway running
// on DATA_DIR (through the address it publishes there); else the PGlite data
// directory opened directly, with the same lock a gateway takes, so the two
// never open it at once.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { PgBus } from '../../bus/pg-bus.js';
import { seedDemoCatalog } from '../../catalog/seed.js';
import type { Config } from '../../config/types.js';
import { createLogger } from '../../log/logger.js';
import { openEmbeddedStore, readStoreFile } from '../../store/embedded.js';
import { migrate } from '../../store/migrate.js';
import { createPool } from '../../store/pool.js';
import type { CliStore } from './command.js';

export async function openCliStore(config: Config): Promise<CliStore> {
  if (config.database_url !== null) {
    const pool = createPool(config.database_url, 2);
    // NOTIFY reaches every gateway instance on this database at once; their change-log poll is the fallback.
    const bus = new PgBus(config.database_url, pool, createLogger('silent', 'cli'));
    return { pool, publish: (topic, payload) => bus.publish(topic, payload), where: 'DATABASE_URL', close: () => pool.end() };
  }
  const running = readStoreFile(config.data_dir);
  if (running !== null) {
    // The gateway's workers learn of our edits from the change log they poll (the cluster's IPC bus is not reachable from here).
    const pool = createPool(running.url, 2);
    return { pool, publish: null, where: `the store of the gateway running on ${config.data_dir} (pid ${running.pid})`, close: () => pool.end() };
  }
  // Never create a store here: from the wrong directory, `./data` would be a
  // new, empty store and the operator's edits would silently go nowhere.
  if (!existsSync(join(config.data_dir, 'pgdata'))) {
    throw new Error(
      `no store found: DATABASE_URL is not set, no gateway is running on ${config.data_dir}, and that directory holds no embedded store ` +
        '(start the gateway once, or set DATA_DIR or DATABASE_URL)',
    );
  }
  const embedded = await openEmbeddedStore(config.data_dir, 4);
  const pool = createPool(embedded.url, 2);
  try {
    // A store written by an older gateway is brought up to this code's schema, as a gateway start would.
    await migrate(pool);
    if (config.catalog.seed_demo) await seedDemoCatalog(pool);
  } catch (err) {
    await pool.end().catch(() => {});
    await embedded.close();
    throw err;
  }
  return {
    pool,
    publish: null,
    where: `the data directory ${config.data_dir}`,
    async close() {
      await pool.end().catch(() => {});
      await embedded.close();
    },
  };
}
