// Organizations (with their money, in integer micros) and API keys. A key is
// stored as the SHA-256 of the whole key plus its two display fragments; the
// secret itself is never stored.
//
// api_key_changes is the key change log every worker polls (every 250 ms) on
// top of the change bus: the `tollgate` command is a separate process that
// cannot reach the cluster's IPC bus, and a lost notification must only delay
// a revocation, never lose it. Writers take an advisory lock before inserting
// (see auth/key-store.ts), so seq order is commit order and a poller reading
// "seq > last seen" never skips a row.
export default {
  id: 2,
  name: 'organizations-keys',
  sql: `
CREATE TABLE organizations (
  id uuid PRIMARY KEY,
  name text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  balance_micros bigint NOT NULL DEFAULT 0,
  package_micros bigint NOT NULL DEFAULT 0,
  package_expires_at timestamptz,
  quota_per_second integer CHECK (quota_per_second > 0),
  quota_per_minute integer CHECK (quota_per_minute > 0)
);

CREATE TABLE api_keys (
  id uuid PRIMARY KEY,
  org_id uuid NOT NULL REFERENCES organizations(id),
  name text NOT NULL,
  key_hash bytea NOT NULL UNIQUE,
  prefix text NOT NULL,
  last4 text NOT NULL,
  version integer NOT NULL DEFAULT 1,
  scope jsonb,
  binding text NOT NULL DEFAULT 'organization',
  funding text NOT NULL DEFAULT 'balance' CHECK (funding IN ('balance', 'package')),
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz,
  revoked_at timestamptz,
  idempotency_key text,
  request_hash bytea,
  UNIQUE (org_id, idempotency_key)
);
CREATE INDEX api_keys_org ON api_keys (org_id, created_at);

CREATE TABLE api_key_changes (
  seq bigserial PRIMARY KEY,
  key_id uuid NOT NULL REFERENCES api_keys(id),
  change text NOT NULL CHECK (change IN ('created', 'edited', 'revoked')),
  at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX api_key_changes_at ON api_key_changes (at);
`,
};
