// Reads the published catalog from the store and builds a snapshot. A handful
// of queries per revision change, never per request.
import type { Pool } from '../store/pool.js';
import { buildSnapshot, type CatalogRows, type CatalogSnapshot } from './snapshot.js';

export async function currentRevision(pool: Pool): Promise<number> {
  const { rows } = await pool.query<{ r: number }>('SELECT coalesce(max(revision), 0)::bigint AS r FROM catalog_revisions');
  return rows[0].r;
}

export async function loadCatalog(pool: Pool, simulatorUrl: string | null): Promise<CatalogSnapshot> {
  // One read-only transaction so that the tables and the revision agree.
  const client = await pool.connect();
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    // loaded_at is when the loaded revision was published: the same in every
    // worker and instance, so the list body (and its ETag) is too.
    const latest = (
      await client.query<{ revision: number; published_at: Date }>(
        'SELECT revision, published_at FROM catalog_revisions ORDER BY revision DESC LIMIT 1',
      )
    ).rows[0] ?? { revision: 0, published_at: new Date(0) };
    const rows: CatalogRows = {
      vendors: (await client.query('SELECT id, code, display_name_en, display_name_ru FROM vendors')).rows,
      models: (await client.query('SELECT * FROM models WHERE active')).rows,
      capabilities: (await client.query("SELECT * FROM model_capabilities WHERE status = 'enabled'")).rows,
      routes: (
        await client.query(
          `SELECT r.model_id, r.protocol_code, r.upstream_model, r.priority,
                  s.id AS supplier_id, s.name, s.wire_protocol, s.base_url, s.credential_env, s.protocols
             FROM routes r JOIN suppliers s ON s.id = r.supplier_id
            WHERE r.active AND s.active AND r.protocol_code = ANY (s.protocols)
            ORDER BY r.priority, s.name`,
        )
      ).rows,
      prices: (await client.query('SELECT * FROM prices')).rows,
      typical: (await client.query('SELECT * FROM model_typical_requests')).rows,
    };
    await client.query('COMMIT');
    return buildSnapshot(latest.revision, latest.published_at.toISOString(), rows, simulatorUrl);
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}
