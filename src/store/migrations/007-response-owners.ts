// Which organization each completed response belongs to: what a later
// request's previous_response_id is checked against (ownership only; the
// gateway never uses an earlier response as context). An id and an
// organization, nothing else: no content is ever stored. created_at is there
// so an operator can prune old rows (a response older than anyone continues
// from); nothing here deletes them.
export default {
  id: 7,
  name: 'response-owners',
  sql: `
CREATE TABLE response_owners (
  response_id text PRIMARY KEY,
  org_id uuid NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
`,
};
