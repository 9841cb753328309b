// The primary's side of its workers' books' files (worker-books.ts), on
// either host: the directory they live in, and what is done with the files
// of workers that are gone.
//
// The directory is `<data_dir>/books`, the same at every start of this
// instance, so that what a crash of the whole host left there (calls settled
// and answered, not yet in the store) is written when the instance starts
// again: at most flush_ms of charges are lost only while it stays down. A
// directory must belong to one running primary: its files are read as gone
// writers' when it starts, so a second instance given the same data_dir
// would write and fold a live one's parts. A `primary.pid` file says whose it
// is; a live process there other than this one refuses the start.
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { removeQuietly, type Unwritten } from './books-file.js';
import type { LedgerStore } from './store.js';
import { settledRows } from './worker-batch.js';

const LOCK = 'primary.pid';

/** Makes (or takes back) this instance's books directory under `dataDir`; throws if another live primary has it. */
export function openBooksDir(dataDir: string): string {
  const dir = join(dataDir, 'books');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const lock = join(dir, LOCK);
  let holder = NaN;
  try {
    holder = Number(readFileSync(lock, 'utf8').trim());
  } catch {
    // no lock: a first start, or a clean stop
  }
  if (Number.isSafeInteger(holder) && holder > 0 && holder !== process.pid && alive(holder)) {
    throw new Error(`the books directory ${dir} belongs to a running primary (pid ${holder}): give each instance its own data_dir`);
  }
  writeFileSync(lock, `${process.pid}\n`);
  return dir;
}

/** At a clean stop: the directory is this instance's to take again; files still in it are written at the next start. */
export function closeBooksDir(dir: string): { left: number } {
  let left = 0;
  try {
    left = readdirSync(dir).filter((n) => n.endsWith('.jsonl')).length;
  } catch {
    // gone
  }
  removeQuietly(join(dir, LOCK));
  return { left };
}

/**
 * A gone writer's file: its calls not yet in the store are written
 * (idempotent by request id: whatever the writer wrote already counts once),
 * at a seq past every batch it cut, so that a load between this write and
 * the fold counts them all as stored; then its parts fold into the
 * organizations' rows, and the file goes. Resolves with those organizations,
 * whose actors must stop counting the writer apart (OrgActor.writerFolded),
 * and how many calls the file held.
 */
export async function writeGoneWriter(store: LedgerStore, f: Unwritten): Promise<{ orgIds: string[]; calls: number }> {
  const calls = [...f.batches.flatMap((b) => b.calls), ...f.uncut];
  await store.writeWriterBatch(settledRows(calls, f.writer), f.writer, Math.max(0, ...f.batches.map((b) => b.seq)) + 1, false);
  const orgIds = await store.foldWriter(f.writer);
  f.remove();
  return { orgIds, calls: calls.length };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
