// Every key change is announced by the store itself, in the transaction that
// logs it: NOTIFY is sent at commit, so a writer (the console, the CLI, an
// operator's SQL, an older version) cannot commit a change and then fail to
// announce it. Workers listen on the change bus's channel (bus/pg-bus.ts,
// CHANNEL) and read the change log when told; their timed poll of that log is
// then only the safety net (auth/key-sync.ts). One notice per statement: the
// log says what changed, and NOTIFY folds identical notices of a transaction.
export default {
  id: 11,
  name: 'key-change-notify',
  sql: `
CREATE FUNCTION tollgate_key_changes_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('tollgate_changes', 'keys:');
  RETURN NULL;
END $$;
CREATE TRIGGER api_key_changes_notify AFTER INSERT ON api_key_changes
  FOR EACH STATEMENT EXECUTE FUNCTION tollgate_key_changes_notify();
`,
};
