// A settlement's charge is told by its usage row (issue 32: the store's CPU
// per call). The journal's charge entry repeated the row (its id is the
// request id's, its amount minus charged_micros, its organization and funding
// the row's): a second row per call, with its primary key, its organization
// index and its foreign-key check, about half of what the store spent per
// call. Now usage_records.charge_writer set (the writer's tag, as the entry
// carried it) says the row's charge is in the journal; the request id's
// primary key is what makes a repeated settlement a no-op, as the entry's id
// was. The entries written apart (opening, credit, forfeit) stay rows of
// ledger_postings, and ledger_entries is the journal as every reader knew it:
// those rows and one charge per charged usage row.
//
// usage_records_model served only the typical-request refresh, which reads
// every model's rows of the last window anyway; a BRIN index on finished_at
// bounds that read to the window for a few bytes per thousand rows, where the
// B-tree cost an index entry per call.
export default {
  id: 10,
  name: 'charges-in-usage-rows',
  sql: `
ALTER TABLE usage_records ADD COLUMN charge_writer text;

-- Every charge entry that repeats its usage row moves onto it; any that does not (none is written so) stays an entry.
WITH moved AS (
  DELETE FROM ledger_entries e USING usage_records u
  WHERE e.kind = 'charge' AND e.id = 'charge:' || u.request_id AND e.org_id = u.org_id
    AND e.funding = u.funding AND e.amount_micros = -u.charged_micros AND e.writer IS NOT NULL
  RETURNING u.request_id, e.writer
)
UPDATE usage_records u SET charge_writer = moved.writer FROM moved WHERE u.request_id = moved.request_id;

ALTER TABLE ledger_entries RENAME TO ledger_postings;

CREATE VIEW ledger_entries AS
SELECT id, org_id, kind, funding, amount_micros, request_id, expires_at, note, writer, created_at FROM ledger_postings
UNION ALL
SELECT 'charge:' || request_id, org_id, 'charge', funding, -charged_micros, request_id, NULL::timestamptz, NULL::text, charge_writer, finished_at
FROM usage_records WHERE charge_writer IS NOT NULL;

DROP INDEX usage_records_model;
CREATE INDEX usage_records_finished ON usage_records USING brin (finished_at);
`,
};
