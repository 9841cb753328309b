// The embedded host: the actors live in the cluster primary and the workers
// reach them over cluster IPC. A reservation (admission and hold together) is
// one request/reply; a settlement is one request/reply answered when the
// charge is as durable as billing.flush_ms promises; a worker's heartbeat is
// one small one-way message every third of a lease. A worker that exits
// takes its holds with it at once (Ledger.ownerGone), not a lease later.
//
// Most calls make no round trip at all: a worker reserves them from its
// allotments (allotments.ts), granted along with the reservations it does
// send or topped up before they run dry, and settles them itself
// (worker-books.ts): the actors hear per batch. The calls the actors hold one
// by one settle here with one request/reply; with billing.flush_ms > 0 settle
// resolves once the command is written to the pipe, which the primary reads
// before it can see this worker gone, and the answer is awaited behind the
// client's reply.
import cluster, { type Worker } from 'node:cluster';
import { randomBytes } from 'node:crypto';
import { Allotments } from './allotments.js';
import { loopMonitor } from '../metrics/event-loop.js';
import { readGoneWorker } from './books-file.js';
import { WorkerBooks } from './worker-books.js';
import { StoreGate } from './store-gate.js';
import type { LedgerStore } from './store.js';
import { ChannelClosed, type PrimaryChannel, type WorkerChannel } from '../ipc/channel.js';
import type { Logger } from '../log/logger.js';
import type { Ledger } from './ledger.js';
import type {
  AllotCommand,
  Allotted,
  AccountView,
  CreditCommand,
  CreditReply,
  LedgerClient,
  ProgressCommand,
  ReleaseCommand,
  ReserveCommand,
  ReserveReply,
  ReserveRequest,
  RetiredCommand,
  SettleCommand,
  SpentReport,
} from './protocol.js';

/** A reservation stands between the caller and its first byte: fail fast (the caller answers 503). */
const RESERVE_TIMEOUT_MS = 3000;
/** Longer than the ledger's own cap on waiting for a durable write (10 s), so a slow store is not mistaken for a dead host. */
const SETTLE_TIMEOUT_MS = 15_000;
const CONSOLE_TIMEOUT_MS = 10_000;
/** Under the console's own wait, so a worker whose store is away fails the sync rather than the console's request timing out. */
const BOOKS_WRITTEN_TIMEOUT_MS = 8_000;
/** A handed-off settlement the primary refused or did not answer is sent again this often, as billing's own retries would (billing.ts). */
const SETTLE_ATTEMPTS = 4;
const SETTLE_RETRY_MS = 500;

/**
 * One worker's books cut and in the store. A worker gone, or going while it is
 * asked (a kill -9: its pipe closes, no answer comes), is not waited for: the
 * primary replays its file (writersGone).
 */
function workerBooksWritten(channel: PrimaryChannel, worker: Worker): Promise<void> {
  if (!worker.isConnected()) return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    const gone = (): void => resolve();
    worker.once('disconnect', gone);
    channel
      .request<void>(worker, 'ledger:books-written', undefined, BOOKS_WRITTEN_TIMEOUT_MS)
      .then(resolve, (err: Error) => (err instanceof ChannelClosed || !worker.isConnected() ? resolve() : reject(err)))
      .finally(() => worker.off('disconnect', gone));
  });
}

/** The primary's side: delivers workers' commands to the ledger. `booksDir`: where its workers keep their books' files (worker-books.ts). */
export function serveLedgerOverIpc(channel: PrimaryChannel, ledger: Ledger, booksDir: string, logger: Logger): void {
  // A one-way command has nobody to answer: a failure (an organization that cannot be loaded while the store is away) is logged, never left to crash the primary.
  const oneWay = (what: string, work: Promise<unknown>): void =>
    void work.catch((err: Error) => logger.error({ err: err.message }, `ledger: a worker's ${what} could not be applied`));
  // A command is the primary's work: its event-loop monitor runs while they come (metrics/event-loop.ts). A heartbeat,
  // every few seconds from each worker, is not: it would keep an idle primary's monitor running.
  const command = <T>(type: string, apply: (cmd: T) => unknown): void =>
    channel.on(type, (cmd: T) => {
      loopMonitor.work();
      return apply(cmd);
    });
  command('ledger:reserve', (cmd: ReserveCommand) => ledger.reserve(cmd));
  command('ledger:allot', (cmd: AllotCommand) => ledger.allot(cmd));
  command('ledger:settle', (cmd: SettleCommand) => ledger.settle(cmd));
  command('ledger:release', (cmd: ReleaseCommand) => ledger.release(cmd));
  command('ledger:credit', (cmd: CreditCommand) => ledger.credit(cmd));
  command('ledger:account', (orgId: string) => ledger.account(orgId));
  command('ledger:refresh', (orgId: string) => ledger.refresh(orgId));
  // The console's usage list asks for this: the journal written, and every worker's books too (the calls settled in its
  // worker, written every flush_ms otherwise), so the list holds every call answered before it was asked for.
  command('ledger:sync', () => Promise.all([ledger.sync(), ...channel.workers().map((w) => workerBooksWritten(channel, w))]));
  channel.on('ledger:beat', (owner: string) => ledger.heartbeat(owner));
  command('ledger:progress', (cmd: ProgressCommand) => void ledger.progress(cmd));
  command('ledger:retired', (cmd: RetiredCommand) => oneWay('retirement', ledger.retired(cmd)));
  command('ledger:spent', (report: SpentReport) => oneWay('batch of settlements', ledger.spent(report)));
  ledger.recalls.recaller = (owner, id) => {
    const worker = channel.workers().find((w) => w.process.pid !== undefined && workerOwner(w.process.pid) === owner);
    if (worker === undefined) return false;
    channel.sendTo(worker, 'ledger:recall', id);
    return true;
  };
  // 'disconnect' comes after the last message the worker sent has been delivered (same pipe, in order).
  // What its books' file holds that the actors never heard of is counted before its allotments go.
  cluster.on('disconnect', (worker) => {
    const pid = worker.process.pid;
    if (pid === undefined) return;
    void ledger.writersGone(pid, readGoneWorker(booksDir, pid)).finally(() => ledger.ownerGone(workerOwner(pid)));
  });
}

/** The hold owner a worker process is, in the embedded host. */
function workerOwner(pid: number): string {
  return `worker:${pid}`;
}

export interface IpcLedgerOptions {
  holdLeaseMs: number;
  /** billing.allotment_calls: how many calls an allotment holds; 0, none (every call reserves through the primary). */
  allotmentCalls: number;
  /** billing.flush_ms: above 0 a settlement is handed off (written to the pipe) rather than waited for. */
  flushMs: number;
  /** billing.journal_max_lag_ms: past it, calls from allotments wait for this worker's books to reach the store. */
  journalMaxLagMs: number;
  /** Where this worker writes its settlements, and the directory of its books' file (the primary's BOOKS_DIR_ENV). */
  store: LedgerStore;
  booksDir: string;
  logger: Logger;
}

/** A worker's side. Its owner id names this process, so its holds go when it does. */
export class IpcLedgerClient implements LedgerClient {
  readonly owner = workerOwner(process.pid);
  private readonly beat: NodeJS.Timeout;
  private readonly allotments: Allotments;
  /** Handed-off settlements whose answer has not come yet: close() waits for them. */
  private readonly unanswered = new Set<Promise<void>>();
  /** The calls this worker settles itself (those from its allotments): worker-books.ts. */
  private readonly books: WorkerBooks;
  /** New calls wait while the store is behind this worker's books, as the primary's journal makes them. */
  private readonly booksGate: StoreGate;

  constructor(
    private readonly channel: WorkerChannel,
    private readonly options: IpcLedgerOptions,
  ) {
    // A third of the lease: two heartbeats can be lost or late before holds go.
    this.beat = setInterval(() => channel.send('ledger:beat', this.owner), Math.max(10, Math.floor(options.holdLeaseMs / 3)));
    this.beat.unref();
    this.books = new WorkerBooks({
      store: options.store,
      writer: `${process.pid}-${randomBytes(4).toString('hex')}`,
      dir: options.booksDir,
      flushMs: options.flushMs,
      report: (report) => channel.send('ledger:spent', report),
      logger: options.logger,
    });
    this.booksGate = new StoreGate(this.books, options.journalMaxLagMs, options.logger);
    // What the allotment's calls spent reaches the actor before the retirement that voids the rest of it.
    this.allotments = new Allotments(
      this.owner,
      options.allotmentCalls,
      (cmd) => {
        this.books.cut();
        // Its streams become holds of their own at the actor, with the progress this worker kept of them.
        for (const call of cmd.inFlight) {
          const progress = this.books.lastProgress(call.requestId);
          if (progress !== undefined) call.progress = progress;
        }
        channel.send('ledger:retired', cmd);
      },
      Date.now,
      (cmd) => channel.request<Allotted | null>('ledger:allot', cmd, RESERVE_TIMEOUT_MS),
    );
    channel.on('ledger:recall', (id: string) => this.allotments.recall(id));
    channel.on('ledger:books-written', () => {
      this.books.cut();
      return this.books.written();
    });
  }

  reserveHere(req: ReserveRequest): boolean {
    return req.keyQuota === undefined && !this.booksGate.closed && this.allotments.take(req);
  }

  async reserve(req: ReserveRequest): Promise<ReserveReply> {
    if (this.booksGate.closed) await this.booksGate.wait(); // the store is behind this worker's books (store-gate.ts)
    return this.allotments.reserve(req, (cmd) => this.channel.request<ReserveReply>('ledger:reserve', cmd, RESERVE_TIMEOUT_MS));
  }

  settle(cmd: SettleCommand): Promise<void> {
    const here = this.allotments.settleHere(cmd.usage.requestId);
    // The row itself, not a copy: the books apply the actor's rules to it, so billing's row (the log line, the metrics) reads the final charge.
    if (here !== null) return this.books.settle(cmd.usage, here.id, here.amount);
    this.books.forget(cmd.usage.requestId); // its progress went to the actor with its allotment's retirement
    const answered = this.settleAnswered(cmd);
    if (this.options.flushMs === 0) return answered;
    const behind = answered.catch((err: Error) => this.settleAgain(cmd, err)).finally(() => this.unanswered.delete(behind));
    this.unanswered.add(behind);
    return this.channel.written();
  }

  // A call from an allotment is finished here only once its settlement is answered, so a retry still names the allotment.
  private async settleAnswered(cmd: SettleCommand): Promise<void> {
    await this.channel.request('ledger:settle', this.allotments.settlement(cmd), SETTLE_TIMEOUT_MS);
    this.allotments.finish(cmd.usage.requestId);
  }

  /** A handed-off settlement refused or unanswered: sent again (the actor applies a settlement once), then logged as lost. */
  private async settleAgain(cmd: SettleCommand, first: Error): Promise<void> {
    let err = first;
    for (let attempt = 2; attempt <= SETTLE_ATTEMPTS && !(err instanceof ChannelClosed); attempt++) {
      await new Promise((r) => setTimeout(r, SETTLE_RETRY_MS * (attempt - 1)));
      try {
        return await this.settleAnswered(cmd);
      } catch (e) {
        err = e as Error;
      }
    }
    // As billing's own give-up: the hold goes with its lease (or with this worker), the charge is lost; what an operator needs to redo it.
    const u = cmd.usage;
    this.options.logger.error({ rid: u.requestId, org: u.orgId, charged: u.chargedMicros, err: err.message }, 'billing: settlement not delivered');
  }

  async release(cmd: ReleaseCommand): Promise<void> {
    this.books.forget(cmd.requestId);
    await this.channel.request('ledger:release', this.allotments.release(cmd), RESERVE_TIMEOUT_MS);
    this.allotments.finish(cmd.requestId);
  }

  progress(cmd: ProgressCommand): void {
    // A stream from an allotment keeps its progress here (worker-books.ts); any other tells the actor.
    const here = this.allotments.progressHere(cmd.usage.requestId);
    if (here !== null) return this.books.progress(cmd.usage, here.id, here.amount);
    this.channel.send('ledger:progress', this.allotments.progress(cmd));
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

  /** Summed with the primary's into /metrics (the journal's gate counts there, each worker's books' gate here). */
  gauges(): Record<string, number> {
    return { ledger_store_behind_waits_total: this.booksGate.waits, ledger_store_behind_refusals_total: this.booksGate.refusals };
  }

  async close(): Promise<void> {
    clearInterval(this.beat);
    await Promise.allSettled([...this.unanswered]);
    this.allotments.close();
    await this.books.close();
  }
}
