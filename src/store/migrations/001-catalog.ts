// The catalog: vendors, models, per-protocol capabilities, suppliers, routes,
// prices, and the append-only publish revision. Money is integer micros (one
// millionth of the account currency) per million tokens or per image unit.
export default {
  id: 1,
  name: 'catalog',
  sql: `
CREATE TABLE vendors (
  id uuid PRIMARY KEY,
  code text NOT NULL UNIQUE,
  display_name_en text NOT NULL,
  display_name_ru text NOT NULL
);

CREATE TABLE models (
  model_id uuid PRIMARY KEY,
  vendor_id uuid NOT NULL REFERENCES vendors(id),
  canonical_name text NOT NULL UNIQUE,
  aliases text[] NOT NULL DEFAULT '{}',
  display_name_en text NOT NULL,
  display_name_ru text NOT NULL,
  description_en text NOT NULL,
  description_ru text NOT NULL,
  banner_seed integer NOT NULL,
  header_badge text CHECK (header_badge IN ('top', 'value', 'fast')),
  context_window_tokens integer CHECK (context_window_tokens > 0),
  max_output_tokens integer CHECK (max_output_tokens > 0),
  released_on date,
  showcase_position integer,
  modality_codes text[] NOT NULL CHECK (modality_codes <@ ARRAY['text_generation', 'embeddings', 'image_generation']),
  active boolean NOT NULL DEFAULT true
);

CREATE TABLE model_capabilities (
  model_id uuid NOT NULL REFERENCES models(model_id),
  protocol_code text NOT NULL CHECK (protocol_code IN ('responses', 'chat_completions', 'native_messages', 'embeddings', 'images')),
  modality_code text NOT NULL CHECK (modality_code IN ('text_generation', 'embeddings', 'image_generation')),
  status text NOT NULL CHECK (status IN ('enabled', 'unsupported')),
  streaming_status text NOT NULL DEFAULT 'unsupported',
  strict_semantics_status text NOT NULL DEFAULT 'unsupported',
  structured_output_mode text NOT NULL DEFAULT 'none',
  structured_output_status text NOT NULL DEFAULT 'unsupported',
  structured_output_streaming_status text NOT NULL DEFAULT 'unsupported',
  tools_status text NOT NULL DEFAULT 'unsupported',
  PRIMARY KEY (model_id, protocol_code, modality_code)
);

CREATE TABLE suppliers (
  id uuid PRIMARY KEY,
  name text NOT NULL UNIQUE,
  wire_protocol text NOT NULL CHECK (wire_protocol IN ('openai-compatible', 'anthropic-compatible')),
  base_url text NOT NULL,
  credential_env text,
  protocols text[] NOT NULL,
  active boolean NOT NULL DEFAULT true
);

CREATE TABLE routes (
  model_id uuid NOT NULL REFERENCES models(model_id),
  supplier_id uuid NOT NULL REFERENCES suppliers(id),
  protocol_code text NOT NULL,
  upstream_model text NOT NULL,
  priority integer NOT NULL DEFAULT 100,
  active boolean NOT NULL DEFAULT true,
  PRIMARY KEY (model_id, supplier_id, protocol_code)
);

CREATE TABLE prices (
  model_id uuid PRIMARY KEY REFERENCES models(model_id),
  input_micros_per_mtok bigint NOT NULL DEFAULT 0 CHECK (input_micros_per_mtok >= 0),
  cached_input_micros_per_mtok bigint NOT NULL DEFAULT 0 CHECK (cached_input_micros_per_mtok >= 0),
  output_micros_per_mtok bigint NOT NULL DEFAULT 0 CHECK (output_micros_per_mtok >= 0),
  image_unit_micros bigint NOT NULL DEFAULT 0 CHECK (image_unit_micros >= 0)
);

CREATE TABLE catalog_revisions (
  revision bigserial PRIMARY KEY,
  published_at timestamptz NOT NULL DEFAULT now(),
  note text NOT NULL DEFAULT ''
);
`,
};
