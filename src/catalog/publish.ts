// Publishing: every change to the catalog ends with a new revision, which is
// what workers watch for.
import type { PoolClient } from '../store/pool.js';

export async function publishRevision(db: PoolClient, note: string): Promise<number> {
  const { rows } = await db.query<{ revision: number }>('INSERT INTO catalog_revisions (note) VALUES ($1) RETURNING revision', [note]);
  return rows[0].revision;
}
