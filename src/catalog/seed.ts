// The demo catalog (config/catalog.seed.json) is applied to an empty store
// on first start, as its first revision. Does nothing when the store already
// holds a catalog.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { configDir } from '../config/paths.js';
import { inTransaction, type Pool } from '../store/pool.js';
import { applyCatalog, parseCatalogFile } from './apply.js';
import { CredentialPolicy } from './credentials.js';

export async function seedDemoCatalog(pool: Pool): Promise<boolean> {
  const seed = parseCatalogFile(readFileSync(join(configDir, 'catalog.seed.json'), 'utf8'));
  return inTransaction(pool, async (db) => {
    await db.query('LOCK TABLE vendors IN EXCLUSIVE MODE');
    const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM vendors');
    if (rows[0].n > 0) return false;
    // The demo names no credential: the strictest policy is enough.
    await applyCatalog(db, seed, 'demo catalog seed', new CredentialPolicy([]));
    return true;
  });
}
