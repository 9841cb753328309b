// Billing: the money journal and the usage rows.
//
// ledger_entries is the journal of every movement of money, immutable and keyed
// by an id derived from what caused it (the request id of a charge, the
// Idempotency-Key of a credit), so applying the same movement twice inserts
// nothing the second time. organizations.balance_micros and package_micros are
// the running sums of this journal, moved by the same statement that inserts
// the entries. `writer` tags the attempt that wrote an entry, so a retried
// write whose first attempt did commit is told from a genuine repeat. Holds (reservations) are not journalled: they live in the
// ledger actors for the few seconds a call lasts, and a host crash ends those
// calls anyway.
//
// usage_records holds one row per finished model call: counts and amounts,
// never content. Ids that callers hand in (key, model) are text so that one
// malformed value cannot make a whole batch of rows fail to insert.
export default {
  id: 3,
  name: 'billing',
  sql: `
CREATE TABLE ledger_entries (
  id text PRIMARY KEY,
  org_id uuid NOT NULL REFERENCES organizations(id),
  kind text NOT NULL CHECK (kind IN ('opening', 'credit', 'charge', 'forfeit')),
  funding text NOT NULL CHECK (funding IN ('balance', 'package')),
  amount_micros bigint NOT NULL,
  request_id text,
  expires_at timestamptz,
  note text,
  writer text,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ledger_entries_org ON ledger_entries (org_id, created_at);

CREATE TABLE usage_records (
  request_id text PRIMARY KEY,
  org_id uuid NOT NULL,
  key_id text NOT NULL,
  model_id text NOT NULL,
  supplier text,
  surface text NOT NULL,
  funding text NOT NULL,
  input_tokens bigint NOT NULL,
  cached_input_tokens bigint NOT NULL,
  output_tokens bigint NOT NULL,
  image_units bigint NOT NULL,
  reserved_micros bigint NOT NULL,
  charged_micros bigint NOT NULL,
  outcome text NOT NULL,
  metered_source text,
  hold_expired boolean NOT NULL DEFAULT false,
  ttfb_ms integer,
  total_ms integer NOT NULL,
  finished_at timestamptz NOT NULL
);
CREATE INDEX usage_records_org ON usage_records (org_id, finished_at DESC);
CREATE INDEX usage_records_model ON usage_records (model_id, finished_at DESC);
`,
};
