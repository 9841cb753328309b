// What a worker's batch holds between its cut and its write (worker-books.ts):
// its calls' usage rows as the store's COPY text, in bytes off the JavaScript
// heap (ByteLog), and what they spent per allotment — the actor's report, and
// what the batch moves in the store's balances (movedBy). Rows are read back
// from the bytes only for the writes COPY cannot take (readRows). The same
// helpers serve the primary replaying a gone worker's file (worker-reports.ts,
// books-replay.ts), from the calls it read there (spendsOf, settledRows).
import type { Spend, UsageRow } from './protocol.js';
import type { BookedCall } from './books-file.js';
import type { SettledRow } from './store.js';
import { readUsageLine } from './usage-line.js';

/** What a batch spent, per allotment: what the actor is told. */
export function spendsOf(calls: readonly BookedCall[]): Spend[] {
  const byAllotment = new Map<string, Spend>();
  for (const { usage, allotment, taken } of calls) addSpend(byAllotment, usage, allotment, taken);
  return [...byAllotment.values()];
}

/** One call added to its allotment's spend. */
export function addSpend(byAllotment: Map<string, Spend>, u: UsageRow, allotment: string, taken: number): void {
  let s = byAllotment.get(allotment);
  if (s === undefined) byAllotment.set(allotment, (s = { orgId: u.orgId, funding: u.funding, allotment, taken: 0, charged: 0, overdraft: 0, calls: 0 }));
  s.taken += taken;
  s.charged += u.chargedMicros;
  s.overdraft += u.overdraftMicros;
  s.calls++;
}

/** A row as the store writes it: with the writer's tag when it carries a charge. */
export function settledRows(calls: readonly BookedCall[], writer: string): SettledRow[] {
  return calls.map((c) => settledRow(c.usage, writer));
}

const settledRow = (usage: UsageRow, writer: string): SettledRow => ({ usage, writer: chargeTag(usage, writer) });

/** A row's charge tag: its writer when it carries a charge, null when it charges nothing. */
export const chargeTag = (usage: UsageRow, writer: string): string | null => (usage.chargedMicros > 0 ? writer : null);

/** The rows of a batch's COPY text, read back (the rare write that cannot go by COPY). */
export function readRows(lines: Buffer, writer: string): SettledRow[] {
  const rows: SettledRow[] = [];
  for (const line of lines.toString('utf8').split('\n')) {
    const row = line === '' ? null : readUsageLine(line);
    if (row !== null) rows.push(settledRow(row.usage, writer));
  }
  return rows;
}

/**
 * What the charges of `spends` move, per organization, exactly: [balance,
 * package]; every organization the batch touches has its entry (its part
 * gets the batch's seq). Null if a sum is past exact arithmetic.
 */
export function movedBy(spends: Iterable<Spend>): Map<string, [bigint, bigint]> | null {
  const moved = new Map<string, [bigint, bigint]>();
  for (const s of spends) {
    if (!Number.isSafeInteger(s.charged)) return null;
    let m = moved.get(s.orgId);
    if (m === undefined) moved.set(s.orgId, (m = [0n, 0n]));
    m[s.funding === 'package' ? 1 : 0] -= BigInt(s.charged);
  }
  return moved;
}

/** Text appended as UTF-8 into one growing buffer: a batch's COPY lines, off the JavaScript heap. */
export class ByteLog {
  private buf = Buffer.allocUnsafeSlow(0);
  private used = 0;

  append(text: string): void {
    const most = this.used + text.length * 3; // UTF-8 takes at most 3 bytes per UTF-16 unit
    if (most > this.buf.length) {
      const grown = Buffer.allocUnsafeSlow(Math.max(most, this.buf.length * 2, 16_384));
      this.buf.copy(grown, 0, 0, this.used);
      this.buf = grown;
    }
    this.used += this.buf.write(text, this.used, 'utf8');
  }

  /** What was appended; the log starts again, sized for about as much (not for the largest batch it ever held). */
  take(): Buffer {
    const out = this.buf.subarray(0, this.used);
    this.buf = Buffer.allocUnsafeSlow(this.used === 0 ? 0 : Math.max(16_384, Math.ceil(this.used * 1.25)));
    this.used = 0;
    return out;
  }
}

/** The spends of several batches written together, per allotment. */
export function mergedSpends(batches: ReadonlyArray<{ spends: ReadonlyMap<string, Spend> }>): Spend[] {
  const byAllotment = new Map<string, Spend>();
  for (const b of batches) {
    for (const s of b.spends.values()) {
      const into = byAllotment.get(s.allotment);
      if (into === undefined) byAllotment.set(s.allotment, { ...s });
      else {
        into.taken += s.taken;
        into.charged += s.charged;
        into.overdraft += s.overdraft;
        into.calls += s.calls;
      }
    }
  }
  return [...byAllotment.values()];
}
