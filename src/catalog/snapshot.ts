// Turns catalog rows into what the workers serve: the name → model map the
// pipeline resolves against, and the GET /v1/models body, rendered once per
// revision. Protocol and modality support is the exact intersection of the
// model's declared enabled capabilities and its routable supplier routes.
import { createHash } from 'node:crypto';
import { formatMoney } from '../money/money.js';
import { wireSpeaks } from '../suppliers/wire.js';
import type { Capability, CatalogModel, ModalityCode, Price, ProtocolCode, Route, Supplier, Vendor } from './types.js';

export interface CatalogRows {
  vendors: Vendor[];
  models: Array<Record<string, any>>;
  capabilities: Array<Record<string, any>>;
  routes: Array<Record<string, any>>;
  prices: Array<Record<string, any>>;
  /** model_typical_requests rows (catalog/typical.ts). */
  typical: Array<Record<string, any>>;
}

export interface CatalogSnapshot {
  revision: number;
  /** When the loaded revision was published (not when this process read it). */
  loadedAt: string;
  stale: boolean;
  /** Canonical names and aliases → model. */
  byName: Map<string, CatalogModel>;
  /** The GET /v1/models body and its ETag. */
  listBody: string;
  etag: string;
  /** Public objects, kept to re-render the list (e.g. when going stale, or a page of it). */
  publicModels: Array<Record<string, unknown>>;
  /** Canonical names and aliases → the model's object as JSON (GET /v1/models/{id}); empty when stale. */
  modelBodies: Map<string, string>;
  /** Stored routes left out because their supplier's wire cannot speak their protocol (logged once per revision). */
  unspeakable: string[];
}

const NO_PRICE: Price = { inputPerMtok: 0, cachedInputPerMtok: 0, outputPerMtok: 0, imageUnit: 0 };

function capabilityOf(row: Record<string, any>): Capability {
  return {
    modality_code: row.modality_code,
    protocol_code: row.protocol_code,
    status: row.status,
    streaming_status: row.streaming_status,
    strict_semantics_status: row.strict_semantics_status,
    structured_output_mode: row.structured_output_mode,
    structured_output_status: row.structured_output_status,
    structured_output_streaming_status: row.structured_output_streaming_status,
    tools_status: row.tools_status,
  };
}

function groupBy<T>(rows: T[], key: (r: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const r of rows) {
    const k = key(r);
    const list = out.get(k);
    if (list === undefined) out.set(k, [r]);
    else list.push(r);
  }
  return out;
}

/**
 * The list body: the spec's members, with the page members Anthropic's
 * clients read (has_more, first_id, last_id) beside them (issue 31 item 7).
 */
export function listJson(revision: number, loadedAt: string, stale: boolean, data: Array<Record<string, unknown>>, hasMore: boolean): string {
  const first = data.length === 0 ? null : data[0]!.id;
  const last = data.length === 0 ? null : data[data.length - 1]!.id;
  return JSON.stringify({ catalog_revision: revision, data, first_id: first, has_more: hasMore, last_id: last, loaded_at: loadedAt, object: 'list', stale });
}

export function renderList(revision: number, loadedAt: string, stale: boolean, data: Array<Record<string, unknown>>): { body: string; etag: string } {
  const body = listJson(revision, loadedAt, stale, data, false);
  const etag = '"' + createHash('sha1').update(body).digest('base64url') + '"';
  return { body, etag };
}

/** CatalogTypicalRequest: the average spend of one finished request, as a decimal string like all money. */
function typicalRequest(t: Record<string, any>): Record<string, unknown> {
  return {
    average_input_tokens: t.average_input_tokens,
    average_output_tokens: t.average_output_tokens,
    average_spend: formatMoney(t.average_charged_micros),
    requests: t.requests,
    window_days: t.window_days,
  };
}

/** A catalog date (pg's Date at local midnight, or 'YYYY-MM-DD') as whole seconds since the epoch, UTC midnight. */
function dateSeconds(d: unknown): number | null {
  if (d instanceof Date) return Date.UTC(d.getFullYear(), d.getMonth(), d.getDate()) / 1000;
  if (typeof d === 'string') {
    const ms = Date.parse(d.length === 10 ? d + 'T00:00:00Z' : d);
    return Number.isFinite(ms) ? Math.floor(ms / 1000) : null;
  }
  return null;
}

/**
 * What the model costs, as decimal strings in the account currency (issue 34
 * item 3: prices where a person chooses a model): per million input, cached
 * input and output tokens, per image; only the parts the model charges.
 */
function pricing(price: Price): Record<string, string> {
  const out: Record<string, string> = {};
  if (price.inputPerMtok > 0) out.input_per_mtok = formatMoney(price.inputPerMtok);
  if (price.cachedInputPerMtok > 0) out.cached_input_per_mtok = formatMoney(price.cachedInputPerMtok);
  if (price.outputPerMtok > 0) out.output_per_mtok = formatMoney(price.outputPerMtok);
  if (price.imageUnit > 0) out.per_image = formatMoney(price.imageUnit);
  return out;
}

function publicModel(
  m: Record<string, any>,
  model: CatalogModel,
  caps: Capability[],
  supplierCount: number,
  typical: Record<string, any> | undefined,
  loadedAt: string,
): Record<string, unknown> {
  // OpenAI's `created` and Anthropic's `created_at`: the release date, or when the catalog revision was published.
  const created = dateSeconds(m.released_on) ?? Math.floor(Date.parse(loadedAt) / 1000);
  const out: Record<string, unknown> = {
    aliases: m.aliases,
    banner_seed: m.banner_seed,
    canonical_name: m.canonical_name,
    capabilities: caps,
  };
  if (m.context_window_tokens !== null) out.context_window_tokens = m.context_window_tokens;
  // The members OpenAI's and Anthropic's clients read (issue 31 item 7), beside the spec's.
  out.created = created;
  out.created_at = new Date(created * 1000).toISOString().replace('.000Z', 'Z');
  out.display_name = m.display_name_en;
  Object.assign(out, {
    description_en: m.description_en,
    description_ru: m.description_ru,
    display_name_en: m.display_name_en,
    display_name_ru: m.display_name_ru,
  });
  if (m.header_badge !== null) out.header_badge = m.header_badge;
  out.id = m.canonical_name;
  if (m.max_output_tokens !== null) out.max_output_tokens = m.max_output_tokens;
  out.modality_codes = model.modalityCodes;
  out.model_id = m.model_id;
  out.object = 'model';
  out.owned_by = model.vendor.code;
  out.pricing = pricing(model.price);
  out.protocol_codes = [...model.protocols.keys()];
  if (m.released_on !== null) out.released_on = m.released_on;
  if (m.showcase_position !== null) out.showcase_position = m.showcase_position;
  out.supplier_count = supplierCount;
  out.type = 'model';
  if (typical !== undefined) out.typical_request = typicalRequest(typical);
  out.vendor = { code: model.vendor.code, display_name_en: model.vendor.display_name_en, display_name_ru: model.vendor.display_name_ru, id: model.vendor.id };
  return out;
}

export function buildSnapshot(revision: number, loadedAt: string, rows: CatalogRows, simulatorUrl: string | null): CatalogSnapshot {
  const vendors = new Map(rows.vendors.map((v) => [v.id, v]));
  const capsByModel = groupBy(rows.capabilities, (r) => r.model_id as string);
  // A route its wire cannot speak has no upstream URL: it is never routed,
  // whatever a hand-written row says (catalog apply refuses such rows).
  const unspeakable: string[] = [];
  const speakable = rows.routes.filter((r) => {
    if (wireSpeaks(r.wire_protocol, r.protocol_code)) return true;
    unspeakable.push(`supplier ${r.name}: wire ${r.wire_protocol} cannot speak ${r.protocol_code} (route of model ${r.model_id} left out)`);
    return false;
  });
  const routesByModel = groupBy(speakable, (r) => r.model_id as string);
  const prices = new Map(rows.prices.map((p) => [p.model_id as string, p]));
  const typical = new Map(rows.typical.map((t) => [t.model_id as string, t]));
  const suppliers = new Map<string, Supplier>();
  const supplierOf = (r: Record<string, any>): Supplier => {
    let s = suppliers.get(r.supplier_id);
    if (s === undefined) {
      s = {
        id: r.supplier_id,
        name: r.name,
        wireProtocol: r.wire_protocol,
        baseUrl: String(r.base_url).replace('{simulator}', simulatorUrl ?? 'http://127.0.0.1:0'),
        credentialEnv: r.credential_env,
        protocols: r.protocols,
      };
      suppliers.set(s.id, s);
    }
    return s;
  };

  const byName = new Map<string, CatalogModel>();
  const publicModels: Array<Record<string, unknown>> = [];
  const sorted = [...rows.models].sort(
    (a, b) => (a.showcase_position ?? Infinity) - (b.showcase_position ?? Infinity) || String(a.canonical_name).localeCompare(b.canonical_name),
  );
  for (const m of sorted) {
    const routes = routesByModel.get(m.model_id) ?? [];
    const protocols = new Map<ProtocolCode, { capability: Capability; routes: Route[] }>();
    const caps: Capability[] = [];
    for (const row of capsByModel.get(m.model_id) ?? []) {
      if (!(m.modality_codes as string[]).includes(row.modality_code)) continue;
      const routed = routes.filter((r) => r.protocol_code === row.protocol_code);
      if (routed.length === 0) continue;
      const capability = capabilityOf(row);
      caps.push(capability);
      if (!protocols.has(capability.protocol_code)) {
        protocols.set(capability.protocol_code, {
          capability,
          routes: routed.map((r) => ({ supplier: supplierOf(r), upstreamModel: r.upstream_model, priority: r.priority })),
        });
      }
    }
    if (protocols.size === 0) continue;
    const p = prices.get(m.model_id);
    const modalities = [...new Set(caps.map((c) => c.modality_code))] as ModalityCode[];
    const model: CatalogModel = {
      modelId: m.model_id,
      canonicalName: m.canonical_name,
      vendor: vendors.get(m.vendor_id)!,
      modalityCodes: modalities,
      maxOutputTokens: m.max_output_tokens,
      contextWindowTokens: m.context_window_tokens,
      price: p
        ? { inputPerMtok: p.input_micros_per_mtok, cachedInputPerMtok: p.cached_input_micros_per_mtok, outputPerMtok: p.output_micros_per_mtok, imageUnit: p.image_unit_micros }
        : NO_PRICE,
      protocols,
    };
    const servingSuppliers = new Set<string>();
    for (const { routes: rs } of protocols.values()) for (const r of rs) servingSuppliers.add(r.supplier.id);
    publicModels.push(publicModel(m, model, caps, servingSuppliers.size, typical.get(m.model_id), loadedAt));
    byName.set(model.canonicalName, model);
  }
  // Aliases never shadow a canonical name; the first model (in showcase order) keeps a shared alias.
  for (const model of [...byName.values()]) {
    const row = rows.models.find((m) => m.model_id === model.modelId)!;
    for (const alias of row.aliases as string[]) if (!byName.has(alias)) byName.set(alias, model);
  }
  const bodies = new Map(publicModels.map((p) => [p.id as string, JSON.stringify(p)]));
  const modelBodies = new Map<string, string>();
  for (const [name, model] of byName) modelBodies.set(name, bodies.get(model.canonicalName)!);
  const { body, etag } = renderList(revision, loadedAt, false, publicModels);
  return { revision, loadedAt, stale: false, byName, listBody: body, etag, publicModels, modelBodies, unspeakable };
}

/** The same snapshot marked stale: revision diagnostics kept, no capability advertised. */
export function markStale(snap: CatalogSnapshot): CatalogSnapshot {
  const { body, etag } = renderList(snap.revision, snap.loadedAt, true, []);
  return { ...snap, stale: true, listBody: body, etag, modelBodies: new Map() };
}
