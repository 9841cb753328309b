// Money stays exact, and a charge above its hold is recorded, not dropped.
//
// - Balances and packages are JavaScript numbers in the ledger, exact only up
//   to 2^53 − 1 micros (money/money.ts MAX_MICROS). The ledger refuses a
//   credit past it; this CHECK is the backstop for every writer (the
//   `tollgate credit` command, a credit racing a reload). NOT VALID: it holds
//   for every write from now on without failing the migration on a row an
//   operator wrote past it before (such a row cannot be read anyway: the
//   int8 parser in store/pool.ts refuses to round it).
// - usage_records.overdraft_micros: the part of a call's charge above what
//   was reserved for it (the supplier reported more than the bound), charged
//   in full and recorded here; 0 for every earlier row.
export default {
  id: 5,
  name: 'money-limits-overdraft',
  sql: `
ALTER TABLE organizations ADD CONSTRAINT organizations_money_exact
  CHECK (balance_micros BETWEEN -9007199254740991 AND 9007199254740991
     AND package_micros BETWEEN -9007199254740991 AND 9007199254740991) NOT VALID;

ALTER TABLE usage_records ADD COLUMN overdraft_micros bigint NOT NULL DEFAULT 0;
`,
};
