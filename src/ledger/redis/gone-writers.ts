// The Redis host's side of its workers' books (../worker-books.ts), in each
// instance's primary: a worker that is gone (killed, crashed), or a whole
// instance that was (its files found at the next start), leaves calls settled
// and answered that may not be in the store yet, or not told to their
// shards' owners. They are written here (idempotent by request id: what the
// worker wrote counts once), the writer's parts are folded into the
// organizations' rows, and each owner of one of them is told ('folded'): it
// stops counting the writer apart and reloads the organization, which then
// has every call, told or not. Until then the allotments those calls came
// from stay held at their owner (until their holder's lease), so nothing is
// counted free that was spent.
import type { RedisLike as Redis } from './connection.js'; // one server, or a Redis Cluster
import type { Logger } from '../../log/logger.js';
import { readGoneWorker, readLeftBooks, type Unwritten } from '../books-file.js';
import { writeGoneWriter } from '../books-replay.js';
import type { FoldedCommand } from '../protocol.js';
import type { LedgerStore } from '../store.js';
import { orgsByShard, type Envelope, type RedisKeys } from './keys.js';

const RETRY_MAX_MS = 5000;
/** How long close() waits for gone workers' calls to reach the store; past it their files stay for the next start. */
const CLOSE_WAIT_MS = 10_000;

export interface GoneWritersOptions {
  store: LedgerStore;
  /** The host's command connection. */
  commands: Redis;
  keys: RedisKeys;
  booksDir: string;
  logger: Logger;
}

export class GoneWriters {
  private readonly work = new Set<Promise<void>>();
  private closing = false;

  constructor(private readonly o: GoneWritersOptions) {}

  /** At start, before the workers are forked: every file left in the directory is a gone writer's. Throws if the store cannot take them. */
  async leftAtStart(): Promise<void> {
    for (const f of readLeftBooks(this.o.booksDir)) await this.writeOne(f);
  }

  /** Worker `pid` exited: its files, written in the background (close() waits, bounded). */
  workerGone(pid: number): void {
    const found = readGoneWorker(this.o.booksDir, pid);
    if (found.length === 0) return;
    const p: Promise<void> = this.retrying(found).finally(() => this.work.delete(p));
    this.work.add(p);
  }

  async close(): Promise<void> {
    await Promise.race([Promise.allSettled([...this.work]), new Promise((r) => setTimeout(r, CLOSE_WAIT_MS).unref())]);
    this.closing = true;
  }

  private async retrying(found: Unwritten[]): Promise<void> {
    for (const f of found) {
      for (let wait = 100; ; wait = Math.min(RETRY_MAX_MS, wait * 2)) {
        try {
          await this.writeOne(f);
          break;
        } catch (err) {
          if (this.closing) return;
          this.o.logger.warn({ writer: f.writer, err: (err as Error).message }, 'ledger: a gone worker\'s settlements could not be written yet; retrying');
          await new Promise((r) => setTimeout(r, wait));
        }
      }
    }
  }

  private async writeOne(f: Unwritten): Promise<void> {
    const { orgIds, calls } = await writeGoneWriter(this.o.store, f);
    if (calls > 0) this.o.logger.info({ writer: f.writer, calls }, 'ledger: a gone worker\'s settlements written from its books');
    // Sent until Redis takes it: an owner that never hears it goes on counting the writer's told batches twice (never too little).
    for (const [shard, ids] of orgsByShard(orgIds)) void this.tell(shard, { writer: f.writer, orgIds: ids });
  }

  private async tell(shard: number, cmd: FoldedCommand): Promise<void> {
    const env: Envelope = { o: 'folded', i: 0, r: null, p: cmd };
    for (let wait = 100; !this.closing; wait = Math.min(RETRY_MAX_MS, wait * 2)) {
      try {
        await this.o.commands.xadd(this.o.keys.stream(shard), '*', 'm', JSON.stringify(env));
        return;
      } catch {
        await new Promise((r) => setTimeout(r, wait));
      }
    }
  }
}
