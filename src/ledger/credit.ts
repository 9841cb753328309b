// A credit, applied by an organization's actor (Ledger.credit): durable in
// the store before it counts in memory, under the journal's lock so that a
// reload in it sees a settled store, and idempotent by its key.
import { randomUUID } from 'node:crypto';
import type { OrgActor } from './actor.js';
import type { Journal } from './journal.js';
import type { CreditCommand, CreditReply } from './protocol.js';
import type { Entry } from './records.js';
import { isCheckViolation, type LedgerStore } from './store.js';

export interface CreditDeps {
  store: LedgerStore;
  journal: Journal;
  clock: () => number;
  /** Re-reads the actor's row (call with the journal's lock held). */
  reload(actor: OrgActor): Promise<void>;
  /** Re-reads it under the lock (after a write whose answer was lost). */
  refresh(orgId: string): Promise<void>;
}

export async function applyCredit(actor: OrgActor, cmd: CreditCommand, deps: CreditDeps): Promise<CreditReply> {
  const id = `credit:${cmd.orgId}:${cmd.key ?? randomUUID()}`;
  try {
    // Under the journal's lock: no charge write is in flight, so a reload here sees a settled store.
    return await deps.journal.exclusive(async () => {
      const now = deps.clock();
      const entries: Entry[] = actor.creditEntries(id, cmd.amount, cmd.target, cmd.expiresAt, cmd.note, now);
      if (actor.exceedsLimit(entries)) return { ok: false, code: 'money_limit' };
      let prior;
      try {
        prior = await deps.store.writeCredit(entries);
      } catch (err) {
        // The store's CHECK (migration 005) saw a balance past the maximum that memory did not: nothing was written.
        if (!isCheckViolation(err)) throw err;
        await deps.reload(actor);
        return { ok: false, code: 'money_limit' };
      }
      if (prior === null) {
        actor.credited(entries);
        return { ok: true, entryId: id, replayed: false, account: actor.view(now) };
      }
      // A replay, or our own earlier attempt whose answer was lost: memory takes the store's word.
      await deps.reload(actor);
      return { ok: true, entryId: id, replayed: true, amount: prior.amount, target: prior.funding, account: actor.view(now) };
    });
  } catch (err) {
    // The write may have committed without telling us: reload once the store answers again.
    void deps.refresh(cmd.orgId).catch(() => {});
    throw err;
  }
}
