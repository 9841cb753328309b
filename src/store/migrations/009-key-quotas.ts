// A key's own request quota (issue 35): at most quota_per_minute of its calls
// in any sliding minute, enforced by its organization's ledger actor beside
// the organization's quota (ledger/key-quotas.ts). Null: none, the default.
export default {
  id: 9,
  name: 'key-quotas',
  sql: `
ALTER TABLE api_keys ADD COLUMN quota_per_minute integer CHECK (quota_per_minute BETWEEN 1 AND 1000000);
`,
};
