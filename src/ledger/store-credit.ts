// A credit written straight to the store by a process that cannot reach the
// ledger host (the `tollgate credit` command), with the actor's own rules.
import { randomUUID } from 'node:crypto';
import type { Funding } from '../money/money.js';
import type { Pool } from '../store/pool.js';
import { OrgActor } from './actor.js';
import type { CreditCommand } from './protocol.js';
import { isCheckViolation, PgLedgerStore } from './store.js';

export type StoreCreditResult =
  | { ok: true; entryId: string; replayed: false }
  | { ok: true; entryId: string; replayed: true; amount: number; target: Funding }
  | { ok: false; code: 'unknown_organization' | 'money_limit' };

/**
 * A credit written straight to the store, for processes that cannot reach the
 * ledger host (the `tollgate` command): the same entries and the same
 * statement as the actor's credit. A running host's actor takes it in at its
 * next reconcile (within a second).
 */
export async function creditInStore(pool: Pool, cmd: CreditCommand, now = Date.now()): Promise<StoreCreditResult> {
  const store = new PgLedgerStore(pool);
  const row = await store.loadAccount(cmd.orgId);
  if (row === null) return { ok: false, code: 'unknown_organization' };
  // Only the actor's credit rules are used (forfeiting an expired package); quotas do not matter here.
  const rules = new OrgActor(cmd.orgId, row, { perSecond: 1, perMinute: 1 });
  const entryId = `credit:${cmd.orgId}:${cmd.key ?? randomUUID()}`;
  const entries = rules.creditEntries(entryId, cmd.amount, cmd.target, cmd.expiresAt, cmd.note, now);
  if (rules.exceedsLimit(entries)) return { ok: false, code: 'money_limit' };
  let prior;
  try {
    prior = await store.writeCredit(entries);
  } catch (err) {
    if (isCheckViolation(err)) return { ok: false, code: 'money_limit' };
    throw err;
  }
  if (prior === null) return { ok: true, entryId, replayed: false };
  return { ok: true, entryId, replayed: true, amount: prior.amount, target: prior.funding };
}
