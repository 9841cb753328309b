// A worker's books' file (worker-books.ts writes it, the primary reads it
// when the worker is gone): the one place its lines are made and read.
//
// One line per settled call: `r`, the allotment, what the call took there
// and its usage row as the store's COPY line (usage-line.ts: the text its
// batch sends the store, made once), tab-separated; a `cut` line when the
// lines before it become batch `seq` (reported to the actors in the same
// turn); a `done` line once every batch up to `seq` is in the store. A
// stream served from an allotment writes its progress as a `p` line (the
// usage row it would settle on, outcome `interrupted`), so that if its worker
// dies it is settled on what it had delivered, as the actor settles a hold
// with progress (docs/billing.md "Interrupted streams"); an `x` line says a
// call with progress ended without a settlement here (released, or settled
// through the actor). The writer empties the file whenever everything in it
// is done, writing the streams' last progress again at its start. Lines other
// than a call's are JSON; a file left by an earlier version holds its calls
// as JSON lines too (`u`, `a`, `t`), and is read alike.
import { readFileSync, readdirSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { copyField, readCopyField } from '../store/copy-in.js';
import type { UsageRow } from './protocol.js';
import { readUsageLine } from './usage-line.js';

/** One call settled in a worker: its row, and the allotment it was reserved from with what it took. */
export interface BookedCall {
  usage: UsageRow;
  allotment: string;
  taken: number;
}

/** The file a worker's books are journaled in: `<dir>/<writer>.jsonl`, the writer id being `<pid>-<tag>`. */
export function journalPath(dir: string, writer: string): string {
  return join(dir, `${writer}.jsonl`);
}

/** A settled call's line; `usageLine`: its row as usageLine made it (ending in \n). */
export const rowLine = (allotment: string, taken: number, usageLine: string): string => `${ROW}${copyField(allotment)}\t${taken}\t${usageLine}`;
const ROW = 'r\t';
export const progressLine = (c: BookedCall): string => JSON.stringify({ p: c.usage, a: c.allotment, t: c.taken }) + '\n';
export const forgetLine = (requestId: string): string => JSON.stringify({ x: requestId }) + '\n';
export const cutLine = (seq: number): string => `{"cut":${seq}}\n`;
export const doneLine = (seq: number): string => `{"done":${seq}}\n`;

export function removeQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // already gone
  }
}

/** What a gone worker's file holds that is not in the store yet (worker-reports.ts writes it). */
export interface Unwritten {
  writer: string;
  /** Batches cut (and so reported, unless the worker died in between) and not done, by seq. */
  batches: Array<{ seq: number; calls: BookedCall[] }>;
  /** Calls settled after the last cut, and streams cut off by the worker's death (settled on their last progress): never reported. */
  uncut: BookedCall[];
  /** Removes the file: call once all of it is in the store. */
  remove: () => void;
}

/**
 * The primary's side: the files of worker `pid` in `dir`, read once it is
 * gone (each removed by its `remove` once written). A torn last line (the
 * worker died mid-write) is skipped: its settlement had not resolved, so its
 * call was not answered as settled.
 */
export function readGoneWorker(dir: string, pid: number): Unwritten[] {
  return readBooks(dir, (writer) => writer.startsWith(`${pid}-`));
}

/** Every file in `dir` (a primary starting: all its workers are gone), as readGoneWorker reads one worker's. */
export function readLeftBooks(dir: string): Unwritten[] {
  return readBooks(dir, () => true);
}

function readBooks(dir: string, mine: (writer: string) => boolean): Unwritten[] {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith('.jsonl') && mine(n.slice(0, -'.jsonl'.length)));
  } catch {
    return [];
  }
  const out: Unwritten[] = [];
  for (const name of names) {
    const path = join(dir, name);
    const found: Unwritten = { writer: name.slice(0, -'.jsonl'.length), batches: [], uncut: [], remove: () => removeQuietly(path) };
    let text = '';
    try {
      text = readFileSync(path, 'utf8');
    } catch {
      continue;
    }
    const progress = new Map<string, BookedCall>();
    const ended = new Set<string>();
    // A torn last line (no \n: the worker died mid-write) is left out: its settlement had not resolved.
    for (const line of text.slice(0, text.lastIndexOf('\n') + 1).split('\n')) {
      if (line === '') continue;
      if (line.startsWith(ROW)) {
        const call = readRowLine(line);
        if (call !== null) {
          found.uncut.push(call);
          ended.add(call.usage.requestId);
        }
        continue;
      }
      let v: { u?: UsageRow; p?: UsageRow; x?: string; a?: string; t?: number; cut?: number; done?: number };
      try {
        v = JSON.parse(line);
      } catch {
        continue;
      }
      if (v.u !== undefined && typeof v.a === 'string' && typeof v.t === 'number') {
        found.uncut.push({ usage: v.u, allotment: v.a, taken: v.t });
        ended.add(v.u.requestId);
      } else if (v.p !== undefined && typeof v.a === 'string' && typeof v.t === 'number') progress.set(v.p.requestId, { usage: v.p, allotment: v.a, taken: v.t });
      else if (typeof v.x === 'string') ended.add(v.x);
      else if (typeof v.cut === 'number') {
        found.batches.push({ seq: v.cut, calls: found.uncut });
        found.uncut = [];
      } else if (typeof v.done === 'number') {
        const done = v.done;
        found.batches = found.batches.filter((b) => b.seq > done);
      }
    }
    // Streams still in progress when the worker died: settled on their last progress, never above what they took.
    for (const [rid, call] of progress) {
      if (ended.has(rid)) continue;
      const u = call.usage;
      u.chargedMicros = Number.isSafeInteger(u.chargedMicros) ? Math.min(Math.max(0, u.chargedMicros), call.taken) : call.taken;
      u.overdraftMicros = 0;
      u.holdExpired = false;
      found.uncut.push(call);
    }
    out.push(found);
  }
  return out;
}

/** rowLine's line read back; null if it is not one. */
function readRowLine(line: string): BookedCall | null {
  const afterAllotment = line.indexOf('\t', ROW.length);
  const afterTaken = afterAllotment < 0 ? -1 : line.indexOf('\t', afterAllotment + 1);
  if (afterTaken < 0) return null;
  const allotment = readCopyField(line.slice(ROW.length, afterAllotment));
  const taken = Number(line.slice(afterAllotment + 1, afterTaken));
  const row = readUsageLine(line.slice(afterTaken + 1));
  return allotment === null || !Number.isFinite(taken) || row === null ? null : { usage: row.usage, allotment, taken };
}
