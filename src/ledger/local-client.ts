// A client in the same process as the actors: no transport at all. For the
// primary itself, single-process tools, and tests of the billing maths.
import type { Ledger } from './ledger.js';
import type { AccountView, CreditCommand, CreditReply, LedgerClient, ProgressCommand, ReleaseCommand, ReserveReply, ReserveRequest, SettleCommand } from './protocol.js';

export class LocalLedgerClient implements LedgerClient {
  private readonly beat: NodeJS.Timeout;

  constructor(
    private readonly ledger: Ledger,
    readonly owner: string,
    holdLeaseMs: number,
  ) {
    this.beat = setInterval(() => ledger.heartbeat(owner), Math.max(10, Math.floor(holdLeaseMs / 3)));
    this.beat.unref();
  }

  reserve(req: ReserveRequest): Promise<ReserveReply> {
    return this.ledger.reserve({ requestId: req.requestId, orgId: req.orgId, funding: req.funding, amount: req.amount, owner: this.owner });
  }

  /** No allotments in the actors' own process: every reservation is the actor's. */
  reserveHere(): boolean {
    return false;
  }

  settle(cmd: SettleCommand): Promise<void> {
    // A copy, as a transport would make: the actor writes into the row it is given.
    return this.ledger.settle({ usage: { ...cmd.usage } });
  }

  release(cmd: ReleaseCommand): Promise<void> {
    return this.ledger.release(cmd);
  }

  progress(cmd: ProgressCommand): void {
    this.ledger.progress({ usage: { ...cmd.usage } });
  }

  credit(cmd: CreditCommand): Promise<CreditReply> {
    return this.ledger.credit(cmd);
  }

  account(orgId: string): Promise<AccountView | null> {
    return this.ledger.account(orgId);
  }

  refresh(orgId: string): Promise<void> {
    return this.ledger.refresh(orgId);
  }

  sync(): Promise<void> {
    return this.ledger.sync();
  }

  async close(): Promise<void> {
    clearInterval(this.beat);
  }
}
