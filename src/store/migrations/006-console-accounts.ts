// People who sign in to the web console, and their sessions.
//
// - console_accounts: one row per person of an organization, created by an
//   operator. The password is kept only as its scrypt hash (web/passwords.ts).
//   Emails are unique over the whole service (a person signs in with an email
//   and lands in their organization).
// - console_sessions: one row per signed-in browser. The cookie carries a
//   random token; only its SHA-256 is stored, so a copy of the table opens no
//   session. A session ends at expires_at or when revoked (sign out).
//   org_id NULL is an operator's session (the admin token exchanged for one).
// - console_sign_in_failures: refused sign-ins per account and per address,
//   counted over a window to rate-limit guessing across every worker and
//   instance (web/sign-in-limit.ts).
export default {
  id: 6,
  name: 'console-accounts',
  sql: `
CREATE TABLE console_accounts (
  id uuid PRIMARY KEY,
  org_id uuid NOT NULL REFERENCES organizations(id),
  email text NOT NULL,
  display_name text NOT NULL,
  password_hash text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  disabled_at timestamptz
);
CREATE UNIQUE INDEX console_accounts_email ON console_accounts (lower(email));
CREATE INDEX console_accounts_org ON console_accounts (org_id, created_at);

CREATE TABLE console_sessions (
  token_hash bytea PRIMARY KEY,
  account_id uuid REFERENCES console_accounts(id),
  org_id uuid REFERENCES organizations(id),
  csrf_token text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz
);
CREATE INDEX console_sessions_account ON console_sessions (account_id);

CREATE TABLE console_sign_in_failures (
  bucket text NOT NULL,
  at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX console_sign_in_failures_bucket ON console_sign_in_failures (bucket, at);
`,
};
