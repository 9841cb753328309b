// The embedded host: the actors live in the cluster primary and the workers
// reach them over cluster IPC. A reservation (admission and hold together) is
// one request/reply; a settlement is one request/reply answered when the
// charge is as durable as billing.flush_ms promises; a worker's heartbeat is
// one small one-way message every third of a lease. A worker that exits
// takes its holds with it at once (Ledger.ownerGone), not a lease later.
import cluster from 'node:cluster';
import type { PrimaryChannel, WorkerChannel } from '../ipc/channel.js';
import type { Ledger } from './ledger.js';
import type {
  AccountView,
  CreditCommand,
  CreditReply,
  LedgerClient,
  ProgressCommand,
  ReleaseCommand,
  ReserveCommand,
  ReserveReply,
  ReserveRequest,
  SettleCommand,
} from './protocol.js';

/** A reservation stands between the caller and its first byte: fail fast (the caller answers 503). */
const RESERVE_TIMEOUT_MS = 3000;
/** Longer than the ledger's own cap on waiting for a durable write (10 s), so a slow store is not mistaken for a dead host. */
const SETTLE_TIMEOUT_MS = 15_000;
const CONSOLE_TIMEOUT_MS = 10_000;

/** The primary's side: delivers workers' commands to the ledger. */
export function serveLedgerOverIpc(channel: PrimaryChannel, ledger: Ledger): void {
  channel.on('ledger:reserve', (cmd: ReserveCommand) => ledger.reserve(cmd));
  channel.on('ledger:settle', (cmd: SettleCommand) => ledger.settle(cmd));
  channel.on('ledger:release', (cmd: ReleaseCommand) => ledger.release(cmd));
  channel.on('ledger:credit', (cmd: CreditCommand) => ledger.credit(cmd));
  channel.on('ledger:account', (orgId: string) => ledger.account(orgId));
  channel.on('ledger:refresh', (orgId: string) => ledger.refresh(orgId));
  channel.on('ledger:sync', () => ledger.sync());
  channel.on('ledger:beat', (owner: string) => ledger.heartbeat(owner));
  channel.on('ledger:progress', (cmd: ProgressCommand) => void ledger.progress(cmd));
  // 'disconnect' comes after the last message the worker sent has been delivered (same pipe, in order).
  cluster.on('disconnect', (worker) => {
    if (worker.process.pid !== undefined) ledger.ownerGone(workerOwner(worker.process.pid));
  });
}

/** The hold owner a worker process is, in the embedded host. */
function workerOwner(pid: number): string {
  return `worker:${pid}`;
}

/** A worker's side. Its owner id names this process, so its holds go when it does. */
export class IpcLedgerClient implements LedgerClient {
  readonly owner = workerOwner(process.pid);
  private readonly beat: NodeJS.Timeout;

  constructor(
    private readonly channel: WorkerChannel,
    holdLeaseMs: number,
  ) {
    // A third of the lease: two heartbeats can be lost or late before holds go.
    this.beat = setInterval(() => channel.send('ledger:beat', this.owner), Math.max(10, Math.floor(holdLeaseMs / 3)));
    this.beat.unref();
  }

  reserve(req: ReserveRequest): Promise<ReserveReply> {
    const cmd: ReserveCommand = { requestId: req.requestId, orgId: req.orgId, funding: req.funding, amount: req.amount, owner: this.owner };
    return this.channel.request<ReserveReply>('ledger:reserve', cmd, RESERVE_TIMEOUT_MS);
  }

  async settle(cmd: SettleCommand): Promise<void> {
    await this.channel.request('ledger:settle', cmd, SETTLE_TIMEOUT_MS);
  }

  async release(cmd: ReleaseCommand): Promise<void> {
    await this.channel.request('ledger:release', cmd, RESERVE_TIMEOUT_MS);
  }

  progress(cmd: ProgressCommand): void {
    this.channel.send('ledger:progress', cmd);
  }

  credit(cmd: CreditCommand): Promise<CreditReply> {
    return this.channel.request<CreditReply>('ledger:credit', cmd, CONSOLE_TIMEOUT_MS);
  }

  async account(orgId: string): Promise<AccountView | null> {
    return (await this.channel.request<AccountView | null>('ledger:account', orgId, CONSOLE_TIMEOUT_MS)) ?? null;
  }

  async refresh(orgId: string): Promise<void> {
    await this.channel.request('ledger:refresh', orgId, CONSOLE_TIMEOUT_MS);
  }

  async sync(): Promise<void> {
    await this.channel.request('ledger:sync', undefined, CONSOLE_TIMEOUT_MS);
  }

  async close(): Promise<void> {
    clearInterval(this.beat);
  }
}
