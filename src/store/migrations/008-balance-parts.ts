// Per-writer parts of an organization's balance (issue 32). HTTP workers
// settle the calls they served from their allotments themselves and write
// those charges in batches; were each batch to add to the organization's own
// row, every worker settling for one busy organization would queue on that
// row's lock once per batch. Each writer (a worker process) adds to a row of
// its own here instead, and an organization's money is its row plus its
// parts: organization_money says so once, and everything that shows or
// checks a balance reads it there. `seq` is the writer's last batch that
// touched the part: the ledger actor reads it with the balance to know which
// of the batches it heard of the store already counts. When a writer is gone
// and its batches are all written, the primary folds its parts into the
// organizations' rows (ledger/store.ts foldWriter), so the table holds about
// one row per organization per live worker.
export default {
  id: 8,
  name: 'balance-parts',
  sql: `
CREATE TABLE organization_balance_parts (
  org_id uuid NOT NULL REFERENCES organizations(id),
  writer text NOT NULL,
  balance_micros bigint NOT NULL DEFAULT 0,
  package_micros bigint NOT NULL DEFAULT 0,
  seq bigint NOT NULL,
  PRIMARY KEY (org_id, writer)
);

CREATE VIEW organization_money AS
SELECT o.id,
       o.balance_micros + coalesce((SELECT sum(p.balance_micros) FROM organization_balance_parts p WHERE p.org_id = o.id), 0)::bigint AS balance_micros,
       o.package_micros + coalesce((SELECT sum(p.package_micros) FROM organization_balance_parts p WHERE p.org_id = o.id), 0)::bigint AS package_micros
FROM organizations o;
`,
};
