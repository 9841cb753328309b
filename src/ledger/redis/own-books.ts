// A worker's own books on the Redis host (../worker-books.ts does the
// bookkeeping; this says how its batches, retirements and end reach the
// shards' owners). A batch is told once it is in the store, one 'spent'
// command per shard it touched: an owner that takes a shard over loads the
// store and finds there every batch its predecessor was told of. An
// allotment goes back ('retired') only after the batches holding its calls
// are told, so its owner never counts free what was spent. At a clean stop
// the writer's parts fold into the organizations' rows and their owners are
// told ('folded'); a worker that dies leaves that to its primary
// (gone-writers.ts).
import { randomBytes } from 'node:crypto';
import type { Logger } from '../../log/logger.js';
import type { Pool } from '../../store/pool.js';
import type { FoldedCommand, RetiredCommand, SpentReport } from '../protocol.js';
import { StoreGate } from '../store-gate.js';
import { PgLedgerStore } from '../store.js';
import { WorkerBooks } from '../worker-books.js';
import { orgsByShard, shardOf } from './keys.js';

/** Sends a one-way command to the stream of `orgId`'s shard until Redis takes it (`key`: what names it among those waiting). */
export type SendOneWay = (op: 'spent' | 'retired' | 'folded', orgId: string, key: string, payload: SpentReport | RetiredCommand | FoldedCommand) => void;

export interface OwnBooksOptions {
  pool: Pool;
  booksDir: string;
  flushMs: number;
  journalMaxLagMs: number;
  send: SendOneWay;
  logger: Logger;
}

export class OwnBooks {
  readonly books: WorkerBooks;
  /** New calls wait while the store is behind these books (../store-gate.ts). */
  readonly gate: StoreGate;
  /** Retirements waiting for their calls' batches to be told: close() waits for them. */
  private readonly retiring = new Set<Promise<void>>();

  constructor(private readonly o: OwnBooksOptions) {
    this.books = new WorkerBooks({
      store: new PgLedgerStore(o.pool),
      writer: `${process.pid}-${randomBytes(4).toString('hex')}`,
      dir: o.booksDir,
      flushMs: o.flushMs,
      report: (report) => this.spent(report),
      reportWhenWritten: true,
      logger: o.logger,
    });
    this.gate = new StoreGate(this.books, o.journalMaxLagMs, o.logger);
  }

  /** An allotment retires (Allotments' callback): sent once what its calls spent is in the store and told. */
  retire(cmd: RetiredCommand): void {
    this.books.cut();
    // Its streams become holds of their own at the owner, with the progress kept of them here.
    for (const call of cmd.inFlight) {
      const progress = this.books.lastProgress(call.requestId);
      if (progress !== undefined) call.progress = progress;
    }
    const sent: Promise<void> = this.books
      .written()
      .then(() => this.o.send('retired', cmd.orgId, cmd.id, cmd))
      .finally(() => this.retiring.delete(sent));
    this.retiring.add(sent);
  }

  /**
   * After the allotments' close(): every retirement sent, every batch written
   * (each wait bounded: with the store away, what is left stays in the file for
   * the primary, and the allotments end by their lease), the parts folded.
   */
  async close(waitMs = 10_000): Promise<void> {
    const end = Date.now() + waitMs;
    while (this.retiring.size > 0 && Date.now() < end) await Promise.race([Promise.allSettled([...this.retiring]), new Promise((r) => setTimeout(r, 100))]);
    if (await this.books.close(Math.max(0, end - Date.now()))) await this.fold();
  }

  gauges(): Record<string, number> {
    return { ledger_store_behind_waits_total: this.gate.waits, ledger_store_behind_refusals_total: this.gate.refusals };
  }

  private spent(report: SpentReport): void {
    const byShard = new Map<number, SpentReport>();
    for (const spend of report.spends) {
      const shard = shardOf(spend.orgId);
      let r = byShard.get(shard);
      if (r === undefined) byShard.set(shard, (r = { writer: report.writer, seq: report.seq, spends: [] }));
      r.spends.push(spend);
    }
    for (const [shard, r] of byShard) this.o.send('spent', r.spends[0].orgId, `spent ${r.writer} ${r.seq} ${shard}`, r);
  }

  /** Best effort: parts not folded still count (the balances read are their sums). */
  private async fold(): Promise<void> {
    const writer = this.books.writer;
    try {
      const orgIds = await new PgLedgerStore(this.o.pool).foldWriter(writer);
      for (const [shard, ids] of orgsByShard(orgIds)) this.o.send('folded', ids[0], `folded ${writer} ${shard}`, { writer, orgIds: ids });
    } catch (err) {
      this.o.logger.warn({ err: (err as Error).message }, 'ledger: this worker\'s parts of the balances were not folded; they still count');
    }
  }
}
