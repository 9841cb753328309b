// Loads config/catalog.seed.json into an empty store and publishes it as the
// first revision. Does nothing when the store already holds a catalog.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { configDir } from '../config/paths.js';
import { inTransaction, type Pool } from '../store/pool.js';
import { publishRevision } from './publish.js';

interface SeedFile {
  vendors: Array<{ id: string; code: string; display_name_en: string; display_name_ru: string }>;
  suppliers: Array<{ id: string; name: string; wire_protocol: string; base_url: string; credential_env: string | null; protocols: string[] }>;
  models: Array<Record<string, any>>;
}

export function readSeed(path = join(configDir, 'catalog.seed.json')): SeedFile {
  return JSON.parse(readFileSync(path, 'utf8')) as SeedFile;
}

export async function seedDemoCatalog(pool: Pool, seed: SeedFile = readSeed()): Promise<boolean> {
  return inTransaction(pool, async (db) => {
    await db.query('LOCK TABLE vendors IN EXCLUSIVE MODE');
    const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM vendors');
    if (rows[0].n > 0) return false;
    const vendorIds = new Map<string, string>();
    for (const v of seed.vendors) {
      await db.query('INSERT INTO vendors (id, code, display_name_en, display_name_ru) VALUES ($1, $2, $3, $4)', [v.id, v.code, v.display_name_en, v.display_name_ru]);
      vendorIds.set(v.code, v.id);
    }
    const supplierIds = new Map<string, string>();
    for (const s of seed.suppliers) {
      await db.query(
        'INSERT INTO suppliers (id, name, wire_protocol, base_url, credential_env, protocols) VALUES ($1, $2, $3, $4, $5, $6)',
        [s.id, s.name, s.wire_protocol, s.base_url, s.credential_env, s.protocols],
      );
      supplierIds.set(s.name, s.id);
    }
    for (const m of seed.models) {
      await db.query(
        `INSERT INTO models (model_id, vendor_id, canonical_name, aliases, display_name_en, display_name_ru, description_en, description_ru,
           banner_seed, header_badge, context_window_tokens, max_output_tokens, released_on, showcase_position, modality_codes, active)
         VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16)`,
        [
          m.model_id, vendorIds.get(m.vendor), m.canonical_name, m.aliases ?? [], m.display_name_en, m.display_name_ru, m.description_en, m.description_ru,
          m.banner_seed, m.header_badge ?? null, m.context_window_tokens ?? null, m.max_output_tokens ?? null, m.released_on ?? null,
          m.showcase_position ?? null, m.modality_codes, m.active ?? true,
        ],
      );
      for (const c of m.capabilities ?? []) {
        await db.query(
          `INSERT INTO model_capabilities (model_id, protocol_code, modality_code, status, streaming_status, strict_semantics_status,
             structured_output_mode, structured_output_status, structured_output_streaming_status, tools_status)
           VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10)`,
          [
            m.model_id, c.protocol_code, c.modality_code, c.status ?? 'enabled', c.streaming_status ?? 'unsupported', c.strict_semantics_status ?? 'unsupported',
            c.structured_output_mode ?? 'none', c.structured_output_status ?? 'unsupported', c.structured_output_streaming_status ?? 'unsupported', c.tools_status ?? 'unsupported',
          ],
        );
      }
      for (const r of m.routes ?? []) {
        await db.query('INSERT INTO routes (model_id, supplier_id, protocol_code, upstream_model, priority) VALUES ($1,$2,$3,$4,$5)', [
          m.model_id, supplierIds.get(r.supplier), r.protocol_code, r.upstream_model, r.priority ?? 100,
        ]);
      }
      const p = m.price ?? {};
      await db.query(
        'INSERT INTO prices (model_id, input_micros_per_mtok, cached_input_micros_per_mtok, output_micros_per_mtok, image_unit_micros) VALUES ($1,$2,$3,$4,$5)',
        [m.model_id, p.input_micros_per_mtok ?? 0, p.cached_input_micros_per_mtok ?? 0, p.output_micros_per_mtok ?? 0, p.image_unit_micros ?? 0],
      );
    }
    await publishRevision(db, 'demo catalog seed');
    return true;
  });
}
