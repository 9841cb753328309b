// A worker's commands that wait for an answer (reserve, allot, a durable
// settle, the console's): one XADD to the organization's shard stream, naming
// this worker's reply channel; the shard's owner pushes the answer there,
// alone or in a batch for this worker, and it settles the caller's promise.
// A recall pushed on the same channel goes to the worker's allotments.
import type { RedisLike as Redis } from './connection.js';
import { NeverSent } from '../allotments.js';
import type { Envelope, Op, RedisKeys, ReplyMessage } from './keys.js';

/** The command never reached Redis: nothing was applied. */
export class NotSent extends NeverSent {}
/** Sent, but no answer in time: it may yet be applied. */
export class NoAnswer extends Error {}

interface Waiter {
  resolve: (value: any) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

export class ShardAsks {
  private seq = 0;
  private readonly waiting = new Map<number, Waiter>();

  /**
   * `unready`: why no command can be sent now (null: it can), after any
   * short wait for the worker's first connections. `recall`: an owner's
   * recall of an allotment (and the organization it is for, when named).
   */
  constructor(
    private readonly commands: Redis,
    private readonly keys: RedisKeys,
    private readonly owner: string,
    private readonly unready: () => Promise<string | null>,
    private readonly recall: (allotment: string, orgId: string | undefined) => void,
  ) {}

  async ask<T>(op: Op, shard: number, payload: unknown, timeoutMs: number): Promise<T> {
    const why = await this.unready();
    if (why !== null) throw new NotSent(why);
    const i = ++this.seq;
    const env: Envelope = { o: op, i, r: this.keys.reply(this.owner, shard), p: payload };
    if (op === 'reserve') env.x = Date.now() + timeoutMs;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(i);
        reject(new NoAnswer(`ledger: no answer to ${op} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiting.set(i, { resolve, reject, timer });
      // Written to a live connection, it may have been applied even if the answer is an error: uncertain, not unsent.
      this.commands.xadd(this.keys.stream(shard), '*', 'm', JSON.stringify(env)).catch((err: Error) => {
        if (!this.waiting.delete(i)) return;
        clearTimeout(timer);
        reject(new NoAnswer(`ledger: ${err.message}`));
      });
    });
  }

  /** One answer, or an array of them (an owner's batch for this worker), as pushed on the reply channel. */
  answer(text: string): void {
    let parsed: ReplyMessage | ReplyMessage[];
    try {
      parsed = JSON.parse(text) as ReplyMessage | ReplyMessage[];
    } catch {
      return;
    }
    if (Array.isArray(parsed)) for (const m of parsed) this.settleWaiter(m);
    else this.settleWaiter(parsed);
  }

  /** Stops every wait's timer (the worker is closing: nobody is left to answer). */
  close(): void {
    for (const w of this.waiting.values()) clearTimeout(w.timer);
  }

  private settleWaiter(m: ReplyMessage): void {
    if (typeof m.recall === 'string') return this.recall(m.recall, typeof m.org === 'string' ? m.org : undefined);
    const w = this.waiting.get(m.i);
    if (w === undefined) return; // the caller stopped waiting
    this.waiting.delete(m.i);
    clearTimeout(w.timer);
    if (m.e !== undefined) w.reject(new Error(m.e));
    else w.resolve(m.ok);
  }
}
