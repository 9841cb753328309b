// Numbered migrations, applied once each, in order, recorded in
// schema_migrations. An advisory lock keeps two instances starting at once
// from applying the same one twice.
import type { Pool } from './pool.js';
import { inTransaction } from './pool.js';
import { MIGRATIONS } from './migrations/index.js';

const LOCK_ID = 7_420_001;

export async function migrate(pool: Pool): Promise<number[]> {
  await pool.query(
    'CREATE TABLE IF NOT EXISTS schema_migrations (id integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
  );
  return inTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1)', [LOCK_ID]);
    const done = new Set((await client.query<{ id: number }>('SELECT id FROM schema_migrations')).rows.map((r) => r.id));
    const applied: number[] = [];
    for (const m of MIGRATIONS) {
      if (done.has(m.id)) continue;
      await client.query(m.sql);
      await client.query('INSERT INTO schema_migrations (id, name) VALUES ($1, $2)', [m.id, m.name]);
      applied.push(m.id);
    }
    return applied;
  });
}
