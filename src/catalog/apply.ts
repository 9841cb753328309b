// Applying a catalog file (the format of config/catalog.seed.json, checked
// against config/catalog.schema.json): vendors by code, suppliers by name and
// models by canonical name are inserted or updated — an existing model keeps
// its model_id, which prices, key scopes and usage rows join on — and each
// listed model's capabilities, routes and price are replaced by the file's.
// Entries the file does not name are left as they are. Ends with a new
// catalog revision, which every worker loads within catalog.refresh_ms.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv, type ErrorObject } from 'ajv';
import { configDir } from '../config/paths.js';
import type { PoolClient } from '../store/pool.js';
import { wireSpeaks } from '../suppliers/wire.js';
import type { CredentialPolicy } from './credentials.js';
import { publishRevision } from './publish.js';

export interface CatalogFile {
  vendors?: Array<Record<string, any>>;
  suppliers?: Array<Record<string, any>>;
  models?: Array<Record<string, any>>;
}

export class CatalogFileError extends Error {}

const validateFile = new Ajv({ allErrors: false, strict: false }).compile(JSON.parse(readFileSync(join(configDir, 'catalog.schema.json'), 'utf8')));

function where(e: ErrorObject): string {
  return (e.instancePath || '(top level)') + ' ' + e.message + (e.keyword === 'additionalProperties' ? ` (${String(e.params.additionalProperty)})` : '');
}

export function parseCatalogFile(text: string): CatalogFile {
  let file: unknown;
  try {
    file = JSON.parse(text);
  } catch (err) {
    throw new CatalogFileError(`catalog file is not JSON: ${(err as Error).message}`);
  }
  if (!validateFile(file)) throw new CatalogFileError(`catalog file: ${where(validateFile.errors![0])}`);
  return file as CatalogFile;
}

async function idsByKey(db: PoolClient, sql: string): Promise<Map<string, string>> {
  return new Map((await db.query<{ k: string; id: string }>(sql)).rows.map((r) => [r.k, r.id]));
}

/** Every supplier's credential_env must be one the policy allows; all refused names are listed. */
export function checkCredentials(file: CatalogFile, credentials: CredentialPolicy): void {
  const refused = (file.suppliers ?? [])
    .filter((s) => typeof s.credential_env === 'string' && !credentials.allows(s.credential_env))
    .map((s) => credentials.refusal(String(s.name), s.credential_env));
  if (refused.length > 0) throw new CatalogFileError(refused.join('\n'));
}

/** The refusal for a supplier whose wire cannot speak a protocol (null: it can). */
function unspeakable(supplier: string, wire: string, protocol: string): string | null {
  return wireSpeaks(wire, protocol) ? null : `supplier ${supplier}: wire ${wire} cannot speak ${protocol}`;
}

/**
 * Every protocol a supplier declares must be one its wire can speak: a wire
 * has no URL for any other (requests would go to a path ending in "null").
 * All refusals are listed.
 */
export function checkWires(file: CatalogFile): void {
  const refused = (file.suppliers ?? []).flatMap((s) =>
    (Array.isArray(s.protocols) ? s.protocols : []).map((p: unknown) => unspeakable(String(s.name), String(s.wire_protocol), String(p))).filter((r) => r !== null),
  );
  if (refused.length > 0) throw new CatalogFileError(refused.join('\n'));
}

/** Applies `file` inside the caller's transaction and publishes a revision. */
export async function applyCatalog(db: PoolClient, file: CatalogFile, note: string, credentials: CredentialPolicy): Promise<number> {
  checkCredentials(file, credentials);
  checkWires(file);
  for (const v of file.vendors ?? []) {
    await db.query(
      `INSERT INTO vendors (id, code, display_name_en, display_name_ru) VALUES ($1, $2, $3, $4)
       ON CONFLICT (code) DO UPDATE SET display_name_en = EXCLUDED.display_name_en, display_name_ru = EXCLUDED.display_name_ru`,
      [v.id ?? randomUUID(), v.code, v.display_name_en, v.display_name_ru],
    );
  }
  for (const s of file.suppliers ?? []) {
    await db.query(
      `INSERT INTO suppliers (id, name, wire_protocol, base_url, credential_env, protocols, active) VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (name) DO UPDATE SET wire_protocol = EXCLUDED.wire_protocol, base_url = EXCLUDED.base_url,
         credential_env = EXCLUDED.credential_env, protocols = EXCLUDED.protocols, active = EXCLUDED.active`,
      [s.id ?? randomUUID(), s.name, s.wire_protocol, s.base_url, s.credential_env ?? null, s.protocols, s.active ?? true],
    );
  }
  const vendors = await idsByKey(db, 'SELECT code AS k, id FROM vendors');
  const suppliers = await idsByKey(db, 'SELECT name AS k, id FROM suppliers');
  const supplierRows = (await db.query<{ name: string; wire_protocol: string; protocols: string[] }>('SELECT name, wire_protocol, protocols FROM suppliers')).rows;
  const supplierProtocols = new Map(supplierRows.map((r) => [r.name, r.protocols]));
  const supplierWires = new Map(supplierRows.map((r) => [r.name, r.wire_protocol]));
  for (const m of file.models ?? []) {
    const vendorId = vendors.get(m.vendor);
    if (vendorId === undefined) throw new CatalogFileError(`model ${m.canonical_name}: unknown vendor ${m.vendor}`);
    const { rows } = await db.query<{ model_id: string }>(
      `INSERT INTO models (model_id, vendor_id, canonical_name, aliases, display_name_en, display_name_ru, description_en, description_ru,
         banner_seed, header_badge, context_window_tokens, max_output_tokens, released_on, showcase_position, modality_codes, active)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16)
       ON CONFLICT (canonical_name) DO UPDATE SET vendor_id = EXCLUDED.vendor_id, aliases = EXCLUDED.aliases,
         display_name_en = EXCLUDED.display_name_en, display_name_ru = EXCLUDED.display_name_ru, description_en = EXCLUDED.description_en,
         description_ru = EXCLUDED.description_ru, banner_seed = EXCLUDED.banner_seed, header_badge = EXCLUDED.header_badge,
         context_window_tokens = EXCLUDED.context_window_tokens, max_output_tokens = EXCLUDED.max_output_tokens,
         released_on = EXCLUDED.released_on, showcase_position = EXCLUDED.showcase_position, modality_codes = EXCLUDED.modality_codes,
         active = EXCLUDED.active
       RETURNING model_id`,
      [
        m.model_id ?? randomUUID(), vendorId, m.canonical_name, m.aliases ?? [], m.display_name_en, m.display_name_ru, m.description_en,
        m.description_ru, m.banner_seed, m.header_badge ?? null, m.context_window_tokens ?? null, m.max_output_tokens ?? null,
        m.released_on ?? null, m.showcase_position ?? null, m.modality_codes, m.active ?? true,
      ],
    );
    const modelId = rows[0].model_id;
    await db.query('DELETE FROM model_capabilities WHERE model_id = $1', [modelId]);
    for (const c of m.capabilities ?? []) {
      await db.query(
        `INSERT INTO model_capabilities (model_id, protocol_code, modality_code, status, streaming_status, strict_semantics_status,
           structured_output_mode, structured_output_status, structured_output_streaming_status, tools_status)
         VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10)`,
        [
          modelId, c.protocol_code, c.modality_code, c.status ?? 'enabled', c.streaming_status ?? 'unsupported', c.strict_semantics_status ?? 'unsupported',
          c.structured_output_mode ?? 'none', c.structured_output_status ?? 'unsupported', c.structured_output_streaming_status ?? 'unsupported',
          c.tools_status ?? 'unsupported',
        ],
      );
    }
    await db.query('DELETE FROM routes WHERE model_id = $1', [modelId]);
    for (const r of m.routes ?? []) {
      const supplierId = suppliers.get(r.supplier);
      if (supplierId === undefined) throw new CatalogFileError(`model ${m.canonical_name}: unknown supplier ${r.supplier}`);
      if (!supplierProtocols.get(r.supplier)!.includes(r.protocol_code)) {
        throw new CatalogFileError(`model ${m.canonical_name}: supplier ${r.supplier} does not serve ${r.protocol_code}`);
      }
      // A supplier stored before wires were checked (or written by hand) may declare what its wire cannot speak.
      const refusal = unspeakable(r.supplier, supplierWires.get(r.supplier)!, r.protocol_code);
      if (refusal !== null) throw new CatalogFileError(`model ${m.canonical_name}: route refused, ${refusal}`);
      await db.query('INSERT INTO routes (model_id, supplier_id, protocol_code, upstream_model, priority, active) VALUES ($1,$2,$3,$4,$5,$6)', [
        modelId, supplierId, r.protocol_code, r.upstream_model, r.priority ?? 100, r.active ?? true,
      ]);
    }
    const p = m.price ?? {};
    await db.query(
      `INSERT INTO prices (model_id, input_micros_per_mtok, cached_input_micros_per_mtok, output_micros_per_mtok, image_unit_micros) VALUES ($1,$2,$3,$4,$5)
       ON CONFLICT (model_id) DO UPDATE SET input_micros_per_mtok = EXCLUDED.input_micros_per_mtok,
         cached_input_micros_per_mtok = EXCLUDED.cached_input_micros_per_mtok, output_micros_per_mtok = EXCLUDED.output_micros_per_mtok,
         image_unit_micros = EXCLUDED.image_unit_micros`,
      [modelId, p.input_micros_per_mtok ?? 0, p.cached_input_micros_per_mtok ?? 0, p.output_micros_per_mtok ?? 0, p.image_unit_micros ?? 0],
    );
  }
  return publishRevision(db, note);
}
