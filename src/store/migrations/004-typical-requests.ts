// The catalog's typical_request: what one finished request of each model
// costs on average, aggregated from usage rows by catalog/typical.ts and
// published with the catalog.
export default {
  id: 4,
  name: 'typical-requests',
  sql: `
CREATE TABLE model_typical_requests (
  model_id uuid PRIMARY KEY REFERENCES models(model_id),
  requests bigint NOT NULL,
  average_charged_micros bigint NOT NULL,
  average_input_tokens bigint NOT NULL,
  average_output_tokens bigint NOT NULL,
  window_days integer NOT NULL,
  computed_at timestamptz NOT NULL DEFAULT now()
);
`,
};
