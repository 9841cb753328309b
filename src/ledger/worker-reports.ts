// The primary's side of workers' own books (worker-books.ts): the batches
// they report (each allotment's hold gives up what its calls took, the money
// moves by what they were charged), and a gone worker's file, counted and
// written (books-file.ts). Apart from ledger.ts, which hands it its actors.
import type { Logger } from '../log/logger.js';
import type { OrgActor } from './actor.js';
import type { BookedCall, Unwritten } from './books-file.js';
import type { FoldedCommand, SpentReport } from './protocol.js';
import type { LedgerStore } from './store.js';
import { settledRows, spendsOf } from './worker-batch.js';

/** How long close() waits for gone workers' settlements to reach the store. */
const REPLAY_CLOSE_WAIT_MS = 10_000;

export interface WorkerReportsDeps {
  store: LedgerStore;
  logger: Logger;
  clock: () => number;
  /** The organization's active actor, if any (no I/O). */
  active(orgId: string): OrgActor | undefined;
  /** Loads it (null: no such organization). */
  activate(orgId: string): Promise<OrgActor | null>;
  actors(): Iterable<OrgActor>;
  /** Runs `fn` under the journal's lock, as every reload does. */
  exclusive(fn: () => Promise<void>): Promise<void>;
}

export class WorkerReports {
  /** Calls settled in their workers and told here, since start; and their overdraft. */
  settled = 0;
  overdraftMicros = 0;
  overdraftSettlements = 0;
  /** Each writer's last batch heard of: what a gone worker's file holds past it was never counted here. */
  private readonly reportedSeqs = new Map<string, number>();
  /** Gone workers' batches being written and folded: close() waits for them. */
  private readonly replays = new Set<Promise<void>>();
  /** close() has begun: a worker gone from now on leaves its file to the next start (readLeftBooks). */
  private closeBegun = false;
  /** close() has stopped waiting: replays still failing stop retrying, their files kept. */
  private closing = false;

  constructor(private readonly deps: WorkerReportsDeps) {}

  /**
   * A worker's batch (counted apart in each actor until a load reads the
   * writer's part at this seq). Synchronous for an active organization, so
   * it is applied before the next command from the same worker (a retirement).
   */
  async spent(report: SpentReport): Promise<void> {
    // Heard already (a command applied again after a lost acknowledgement): its allotments gave up what it took once.
    if ((this.reportedSeqs.get(report.writer) ?? 0) >= report.seq) return;
    this.reportedSeqs.set(report.writer, report.seq);
    const now = this.deps.clock();
    for (const s of report.spends) {
      const charged = Number.isSafeInteger(s.charged) ? Math.max(0, s.charged) : 0;
      const actor = this.deps.active(s.orgId) ?? (await this.deps.activate(s.orgId));
      if (actor === null) {
        this.deps.logger.warn({ org: s.orgId, writer: report.writer }, 'ledger: spending for an unknown organization ignored');
        continue;
      }
      actor.lastUsed = now;
      actor.allotments.spend(s.allotment, s.taken);
      actor.writerCharged(report.writer, report.seq, s.funding === 'balance' ? -charged : 0, s.funding === 'package' ? -charged : 0);
      this.settled += s.calls;
      if (s.overdraft > 0) {
        this.overdraftMicros += s.overdraft;
        this.overdraftSettlements++;
      }
    }
  }

  /**
   * Writer `cmd.writer` is gone and its parts were folded into the rows of
   * `cmd.orgIds` elsewhere: the active ones stop counting it apart (now, in
   * command order) and must read their rows again, which hold it now; their ids.
   */
  folded(cmd: FoldedCommand): string[] {
    this.reportedSeqs.delete(cmd.writer);
    const reload: string[] = [];
    for (const orgId of cmd.orgIds) {
      const actor = this.deps.active(orgId);
      if (actor === undefined) continue;
      actor.writerFolded(cmd.writer);
      reload.push(orgId);
    }
    return reload;
  }

  /**
   * Worker `pid` is gone. What its files held that no batch told the actors
   * (`found`) is counted now, before its allotments are voided (the host
   * calls ownerGone once this resolves); then, in the background, every
   * batch not yet in the store is written (idempotent: what the worker wrote
   * already counts once) and its parts are folded into the organizations' rows.
   */
  writersGone(pid: number, found: Unwritten[]): Promise<void> {
    // A worker killed past the drain deadline can be heard of after close() took its list: nobody would wait for its
    // replay, whose writes fail once the store's pool has ended. Its file stays whole, and the next start writes it.
    if (this.closeBegun) {
      if (found.length > 0) this.deps.logger.warn({ pid, writers: found.map((f) => f.writer) }, 'ledger: a worker gone while the primary stops: its books stay for the next start');
      return Promise.resolve();
    }
    let counted!: () => void;
    const countedP = new Promise<void>((resolve) => (counted = resolve));
    // Tracked from this very turn, so close() (after the workers exit) waits for the writes.
    const all = this.goneWorker(pid, found, counted).finally(() => this.replays.delete(all));
    this.replays.add(all);
    return countedP;
  }

  /** Waits (at most REPLAY_CLOSE_WAIT_MS) for gone workers' settlements to be written; past it their files stay for the operator. */
  async close(): Promise<void> {
    this.closeBegun = true;
    const replays = Promise.allSettled([...this.replays]);
    await Promise.race([replays, new Promise((r) => setTimeout(r, REPLAY_CLOSE_WAIT_MS).unref())]);
    this.closing = true;
  }

  private async goneWorker(pid: number, found: Unwritten[], counted: () => void): Promise<void> {
    const prefix = `${pid}-`;
    const writers = new Set([...this.reportedSeqs.keys()].filter((w) => w.startsWith(prefix)));
    try {
      for (const f of found) {
        writers.add(f.writer);
        const reported = this.reportedSeqs.get(f.writer) ?? 0;
        const unheard = [...f.batches.filter((b) => b.seq > reported).flatMap((b) => b.calls), ...f.uncut];
        if (unheard.length === 0) continue;
        const seq = Math.max(reported, ...f.batches.map((b) => b.seq)) + 1;
        try {
          await this.spent({ writer: f.writer, seq, spends: spendsOf(unheard) });
        } catch (err) {
          // An organization could not be loaded (the store is away): the charges still reach the store below, and memory at the next load.
          this.deps.logger.error({ writer: f.writer, err: (err as Error).message }, 'ledger: a gone worker\'s settlements could not be counted in memory');
        }
      }
    } finally {
      counted();
    }
    await Promise.all(
      [...writers].map((writer) => {
        const f = found.find((x) => x.writer === writer);
        const calls = f === undefined ? [] : [...f.batches.flatMap((b) => b.calls), ...f.uncut];
        return this.replayWriter(writer, calls, (this.reportedSeqs.get(writer) ?? 0) + 1).then(() => f?.remove());
      }),
    );
  }

  private async replayWriter(writer: string, calls: BookedCall[], seq: number): Promise<void> {
    const rows = settledRows(calls, writer);
    for (let wait = 100; ; wait = Math.min(5000, wait * 2)) {
      try {
        await this.deps.store.writeWriterBatch(rows, writer, seq, false);
        // Under the journal's lock, as every reload is: no load sees the fold half-way from memory's side.
        await this.deps.exclusive(async () => {
          await this.deps.store.foldWriter(writer);
          for (const actor of this.deps.actors()) actor.writerFolded(writer);
        });
        this.reportedSeqs.delete(writer);
        if (calls.length > 0) this.deps.logger.info({ writer, calls: calls.length }, 'ledger: a gone worker\'s settlements written from its books');
        return;
      } catch (err) {
        if (this.closing) throw err;
        this.deps.logger.warn({ writer, err: (err as Error).message }, 'ledger: a gone worker\'s settlements could not be written yet; retrying');
        await new Promise((r) => setTimeout(r, wait));
      }
    }
  }
}
