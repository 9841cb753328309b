// A worker's own books (issue 32): the calls it served from its allotments
// (allotments.ts) settle here, in the worker, so the common call wakes no
// other process. The ledger actor hears what they spent once per batch (a
// SpentReport), and the worker writes their usage rows and charges to the
// store itself, on its own connection, adding to its own parts of the
// balances (migration 008) so that workers settling for one organization
// never queue on one row.
//
// Durability, as billing.flush_ms promises it (docs/billing.md):
// - A settlement resolves once its row is in this worker's books' file
//   (books-file.ts: written once per event-loop turn, before that turn's
//   answers end), so a worker killed with -9 loses nothing: the primary
//   reads the file when it sees the worker gone, tells the actors what they
//   had not heard of, writes every batch not yet written, and folds the
//   worker's parts into the organizations' rows (worker-reports.ts).
// - A crash of the whole host loses what was not yet written to the store:
//   at most flush_ms of charges while the store keeps up (the file is in the
//   page cache, not fsynced). When it does not, new reservations from the
//   allotments wait for it, as the primary's own journal makes them
//   (behind()/caughtUp(), through embedded-host.ts's StoreGate).
// - Writes are idempotent (usage rows and charges keyed by request id), so a
//   batch written twice, by a retry or by the primary's replay, counts once.
//
// Streams served from an allotment keep their progress here too, so that if
// the worker dies the primary settles them on what they had delivered.
//
// A settled call leaves the heap in the turn it settles: its usage row is
// made into the store's COPY line once (usage-line.ts), which goes into the
// file and, as bytes, into its batch; the batch keeps only those bytes and
// what its calls spent per allotment. The rows are read back from the bytes
// only when the COPY cannot take them (a retry, a row already stored, a row
// the store refuses), the rare case. Measured: docs/performance.md, "A
// settled call leaves the worker's heap".
import { closeSync, ftruncateSync, openSync, writeSync } from 'node:fs';
import type { Logger } from '../log/logger.js';
import type { Spend, SpentReport, UsageRow } from './protocol.js';
import type { LedgerStore, SettledRow } from './store.js';
import { isDataError } from './journal.js';
import { LagWaiters } from './lag-waiters.js';
import { chargeAgainst } from './records.js';
import { cutLine, doneLine, forgetLine, journalPath, progressLine, removeQuietly, rowLine } from './books-file.js';
import { usageLine } from './usage-line.js';
import { addSpend, ByteLog, chargeTag, mergedSpends, movedBy, readRows } from './worker-batch.js';

const RETRY_MIN_MS = 100;
const RETRY_MAX_MS = 5000;
/** flush_ms = 0 waits for the write, but not forever (as Ledger.settle's DURABLE_WAIT_MAX_MS). */
const DURABLE_WAIT_MAX_MS = 10_000;

interface Batch {
  seq: number;
  /** Its calls' usage rows as the store's COPY text (usage-line.ts), each made when its call settled. */
  lines: Buffer;
  calls: number;
  /** What its calls spent, per allotment: what the actor is told. */
  spends: Map<string, Spend>;
  /** When its oldest call was settled (ms since epoch). */
  since: number;
  done: Array<() => void>;
}

export interface WorkerBooksOptions {
  store: LedgerStore;
  /** This worker's writer id (its parts of the balances, its file's name). */
  writer: string;
  /** The directory the primary gave it (embedded-host.ts); the file is made there. */
  dir: string;
  flushMs: number;
  /**
   * Told of each batch: in the turn it is cut, before any retirement that
   * follows (the embedded host: its actors live as long as the files' reader);
   * or, with `reportWhenWritten`, once it is in the store (the Redis host:
   * an owner that takes a shard over loads the store, and must find there
   * every batch the one before it was told of).
   */
  report: (r: SpentReport) => void;
  reportWhenWritten?: boolean;
  logger: Logger;
}

export class WorkerBooks {
  /** Calls settled and not yet cut into a batch: how many, what they spent, their COPY lines (this turn's still as text). */
  private openCalls = 0;
  private openSpends = new Map<string, Spend>();
  private readonly openLines = new ByteLog();
  private turnLines = '';
  private openSince = 0;
  private openDone: Array<() => void> = [];
  /** Cut and not yet in the store, oldest first. */
  private readonly unwritten: Batch[] = [];
  private seq = 0;
  /** The last batch in the store, and who waits for a batch to be (written()). */
  private writtenSeq = 0;
  private writtenWaiters: Array<{ seq: number; resolve: () => void }> = [];
  private writing = false;
  private retryMs = 0;
  /** Streams in progress here: the line of each one's last progress (written again when the file starts over). */
  private readonly progressLines = new Map<string, string>();
  /** Lines not yet in the file, and the settlements waiting for them to be. */
  private lines = '';
  private lineWaiters: Array<() => void> = [];
  private fileScheduled = false;
  private readonly fd: number;
  private offset = 0;
  /** Cuts the open batch flush_ms after its first call: an idle worker has no batch open, and no timer wakes it. */
  private cutTimer: NodeJS.Timeout | null = null;
  private readonly catchUps = new LagWaiters((maxLagMs) => this.behind(maxLagMs));
  /** Settled here since start: calls, and batches written. */
  settled = 0;
  batchesWritten = 0;

  constructor(private readonly o: WorkerBooksOptions) {
    this.fd = openSync(journalPath(o.dir, o.writer), 'w');
  }

  /**
   * Settles a call reserved from allotment `allotment` (it took `taken`
   * there). Resolves once its row is in this worker's file (flush_ms > 0),
   * or in the store (flush_ms = 0).
   */
  settle(usage: UsageRow, allotment: string, taken: number): Promise<void> {
    this.progressLines.delete(usage.requestId);
    chargeAgainst(usage, taken);
    usage.holdExpired = false;
    if (this.openCalls === 0) {
      this.openSince = Date.now();
      this.cutLater();
    }
    this.openCalls++;
    addSpend(this.openSpends, usage, allotment, taken);
    this.settled++;
    const line = usageLine(usage, chargeTag(usage, this.o.writer));
    this.turnLines += line;
    this.lines += rowLine(allotment, taken, line);
    const inFile = new Promise<void>((resolve) => this.lineWaiters.push(resolve));
    this.scheduleFile();
    if (this.o.flushMs > 0) return inFile;
    // flush_ms = 0: cut as soon as this turn's lines are in the file; resolve when the store has them.
    return new Promise<void>((resolve) => {
      const cap = setTimeout(resolve, DURABLE_WAIT_MAX_MS);
      this.openDone.push(() => {
        clearTimeout(cap);
        resolve();
      });
    });
  }

  /** A stream's progress (ProgressCommand's usage row, outcome `interrupted`): what it settles on if this worker dies first. */
  progress(usage: UsageRow, allotment: string, taken: number): void {
    const line = progressLine({ usage, allotment, taken });
    this.progressLines.set(usage.requestId, line);
    this.lines += line;
    this.scheduleFile();
  }

  /** The last progress of a stream in progress here, if it reported any (an allotment's retirement hands it to the actor). */
  lastProgress(requestId: string): UsageRow | undefined {
    const line = this.progressLines.get(requestId);
    return line === undefined ? undefined : (JSON.parse(line) as { p: UsageRow }).p;
  }

  /** A call that reported progress here ends without a settlement here (released, or settled through the actor). */
  forget(requestId: string): void {
    if (!this.progressLines.delete(requestId)) return;
    this.lines += forgetLine(requestId);
    this.scheduleFile();
  }

  /** Settlements not yet in the store. */
  get backlog(): number {
    let n = this.openCalls;
    for (const b of this.unwritten) n += b.calls;
    return n;
  }

  /** How long the oldest settlement not yet in the store has waited (0: none). */
  lagMs(now: number): number {
    const oldest = this.unwritten.length > 0 ? this.unwritten[0].since : this.openCalls > 0 ? this.openSince : null;
    return oldest === null ? 0 : Math.max(0, now - oldest);
  }

  behind(maxLagMs: number): boolean {
    return this.lagMs(Date.now()) > maxLagMs;
  }

  /** Resolves true once no settlement not yet in the store has waited longer than `maxLagMs`, false after `waitMs`. */
  caughtUp(maxLagMs: number, waitMs: number): Promise<boolean> {
    return this.catchUps.wait(maxLagMs, waitMs);
  }

  /**
   * The calls settled so far become a batch: the actor is told now (in this
   * turn, so before any retirement sent after it), the store is written next.
   * Called flush_ms after a batch's first call (cutLater), and before an allotment is retired.
   */
  cut(): void {
    this.writeFile();
    if (this.openCalls === 0) return;
    const batch: Batch = { seq: ++this.seq, lines: this.openLines.take(), calls: this.openCalls, spends: this.openSpends, since: this.openSince, done: this.openDone };
    this.openCalls = 0;
    this.openSpends = new Map();
    this.openDone = [];
    this.append(cutLine(batch.seq));
    if (this.o.reportWhenWritten !== true) this.o.report({ writer: this.o.writer, seq: batch.seq, spends: [...batch.spends.values()] });
    this.unwritten.push(batch);
    this.kick();
  }

  /** This worker's writer id: its parts of the balances, its file's name. */
  get writer(): string {
    return this.o.writer;
  }

  /** Resolves once every batch cut so far is in the store (call cut() first to include what is open). */
  written(): Promise<void> {
    const seq = this.seq;
    if (this.writtenSeq >= seq) return Promise.resolve();
    return new Promise((resolve) => this.writtenWaiters.push({ seq, resolve }));
  }

  /** Cuts what is open and waits (at most `waitMs`) for every batch to be in the store; the file goes when all is (resolves true then). */
  async close(waitMs = 10_000): Promise<boolean> {
    if (this.cutTimer !== null) clearTimeout(this.cutTimer);
    this.cutTimer = null;
    this.cut();
    const end = Date.now() + waitMs;
    while (this.unwritten.length > 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    closeSync(this.fd);
    // Anything still unwritten stays in the file for the primary to replay.
    if (this.unwritten.length > 0) return false;
    removeQuietly(journalPath(this.o.dir, this.o.writer));
    return true;
  }

  /** A batch opened: it is cut flush_ms from now, unless a cut is due sooner (one armed for a batch cut early, at a retirement). */
  private cutLater(): void {
    if (this.o.flushMs === 0 || this.cutTimer !== null) return;
    this.cutTimer = setTimeout(() => {
      this.cutTimer = null;
      this.cut();
    }, this.o.flushMs);
    this.cutTimer.unref();
  }

  private scheduleFile(): void {
    if (this.fileScheduled) return;
    this.fileScheduled = true;
    setImmediate(() => {
      this.writeFile();
      if (this.o.flushMs === 0) this.cut();
    });
  }

  /** This turn's lines go to the file in one write (and its calls' COPY lines to their batch's bytes); then the settlements waiting for them resolve. */
  private writeFile(): void {
    this.fileScheduled = false;
    if (this.lines === '') return;
    this.append(this.lines);
    this.lines = '';
    if (this.turnLines !== '') {
      this.openLines.append(this.turnLines);
      this.turnLines = '';
    }
    const waiters = this.lineWaiters;
    this.lineWaiters = [];
    for (const w of waiters) w();
  }

  private append(text: string): void {
    const buf = Buffer.from(text, 'utf8');
    let at = 0;
    while (at < buf.length) at += writeSync(this.fd, buf, at, buf.length - at, this.offset + at);
    this.offset += buf.length;
  }

  /** One write at a time, carrying every batch cut so far (the parts take the last seq). */
  private kick(): void {
    if (this.writing || this.unwritten.length === 0) return;
    this.writing = true;
    const batches = this.unwritten.slice();
    const seq = batches[batches.length - 1].seq;
    const lines = batches.length === 1 ? batches[0].lines : Buffer.concat(batches.map((b) => b.lines));
    const spends = batches.length === 1 ? [...batches[0].spends.values()] : mergedSpends(batches);
    const first = this.retryMs === 0;
    void this.write(lines, spends, seq, first).then(
      () => {
        this.retryMs = 0;
        this.unwritten.splice(0, batches.length);
        this.batchesWritten += batches.length;
        this.append(doneLine(seq));
        if (this.o.reportWhenWritten === true) this.o.report({ writer: this.o.writer, seq, spends });
        this.writtenSeq = seq;
        if (this.writtenWaiters.length > 0) {
          const ready = this.writtenWaiters.filter((w) => w.seq <= seq);
          this.writtenWaiters = this.writtenWaiters.filter((w) => w.seq > seq);
          for (const w of ready) w.resolve();
        }
        // Everything in the file is done: start it again, so it stays about a flush's worth long (with the streams' last progress).
        if (this.unwritten.length === 0 && this.openCalls === 0 && this.lines === '') {
          ftruncateSync(this.fd, 0);
          this.offset = 0;
          if (this.progressLines.size > 0) this.append([...this.progressLines.values()].join(''));
        }
        for (const b of batches) for (const d of b.done) d();
        this.writing = false;
        this.catchUps.wake();
        this.kick();
      },
      (err: Error) => {
        this.retryMs = Math.min(RETRY_MAX_MS, Math.max(RETRY_MIN_MS, this.retryMs * 2));
        const calls = batches.reduce((n, b) => n + b.calls, 0);
        this.o.logger.warn({ err: err.message, calls, retryMs: this.retryMs }, 'ledger: a worker could not write its settlements; retrying');
        setTimeout(() => {
          this.writing = false;
          this.kick();
        }, this.retryMs).unref();
      },
    );
  }

  /**
   * A first attempt sends the batch's lines by COPY as they are; a retry, a
   * batch that met a row already stored, or one with a sum past exact
   * arithmetic goes by the statement, its rows read back from the lines.
   */
  private async write(lines: Buffer, spends: Spend[], seq: number, firstAttempt: boolean): Promise<void> {
    const writer = this.o.writer;
    let rows: SettledRow[] | null = null;
    try {
      const moved = firstAttempt ? movedBy(spends) : null;
      if (moved !== null && (await this.o.store.copyWriterLines(lines, moved, writer, seq))) return;
      rows = readRows(lines, writer);
      await this.o.store.writeWriterBatch(rows, writer, seq, false);
    } catch (err) {
      rows ??= readRows(lines, writer);
      if (!isDataError(err) || rows.length === 1) {
        if (isDataError(err)) return this.drop(rows[0]!.usage, err as Error);
        throw err;
      }
      // One row the store refuses must not hold back the others: each alone, the refused one dropped.
      for (const row of rows) {
        try {
          await this.o.store.writeWriterBatch([row], writer, seq, false);
        } catch (e) {
          if (!isDataError(e)) throw e;
          this.drop(row.usage, e as Error);
        }
      }
    }
  }

  /** As the journal does (journal.ts): a row the store refuses as malformed is logged and dropped; the actor's next load drops its charge from memory too. */
  private drop(u: UsageRow, err: Error): void {
    this.o.logger.error({ rid: u.requestId, org: u.orgId, charged: u.chargedMicros, err: err.message }, 'ledger: the store refused a settlement; dropped');
  }
}
