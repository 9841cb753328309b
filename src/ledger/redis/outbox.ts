// What a shard's owner sends back to Redis, gathered per turn of the event
// loop and sent as one pipeline: hold mirror writes, then XACKs, then the
// answers, one PUBLISH per worker. The order is the point: a hold is mirrored
// before its command is acknowledged, and both before its caller hears of it,
// so whatever a caller was told survives this process.
import type { RedisLike } from './connection.js';
import { GROUP, type ReplyMessage } from './keys.js';
import { publishIn } from './pubsub.js';

export class Outbox {
  private mirrorOps: Array<[requestId: string, value: string | null]> = [];
  private acks: string[] = [];
  private replies = new Map<string, ReplyMessage[]>();
  private scheduled = false;
  private sent: Promise<void> = Promise.resolve();
  /** While false, XACKs that failed are not retried (the shard is no longer ours). */
  active = true;

  constructor(
    private readonly redis: RedisLike,
    private readonly stream: string,
    private readonly holdsKey: string,
    /** Answers by SPUBLISH on the shard's slot (pubsub.ts). */
    private readonly cluster = false,
  ) {}

  /** value null: the hold is gone. */
  mirror(requestId: string, value: string | null): void {
    this.mirrorOps.push([requestId, value]);
    this.schedule();
  }

  ack(id: string): void {
    this.acks.push(id);
    this.schedule();
  }

  reply(channel: string, m: ReplyMessage): void {
    const list = this.replies.get(channel);
    if (list === undefined) this.replies.set(channel, [m]);
    else list.push(m);
    this.schedule();
  }

  /** Sends what is queued now; resolves when everything sent so far has been answered. */
  drain(): Promise<void> {
    this.flush();
    return this.sent;
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    if (this.mirrorOps.length === 0 && this.acks.length === 0 && this.replies.size === 0) return;
    const p = this.redis.pipeline();
    // Sets before deletes is safe: a request id is only ever mirrored, then unmirrored, never the reverse.
    const set: Record<string, string> = {};
    const del: string[] = [];
    for (const [rid, value] of this.mirrorOps) {
      if (value === null) del.push(rid);
      else set[rid] = value;
    }
    if (del.length < this.mirrorOps.length) p.hset(this.holdsKey, set);
    if (del.length > 0) p.hdel(this.holdsKey, ...del);
    const acks = this.acks;
    if (acks.length > 0) p.xack(this.stream, GROUP, ...acks);
    for (const [channel, list] of this.replies) publishIn(p, this.cluster, channel, JSON.stringify(list.length === 1 ? list[0] : list));
    this.mirrorOps = [];
    this.acks = [];
    this.replies = new Map();
    // A lost XACK only means the entry is applied again later (idempotent): retry, gently, while the shard is ours.
    const requeue = (): void => {
      setTimeout(() => {
        if (!this.active || this.acks.length > 100_000) return;
        this.acks.push(...acks);
        this.schedule();
      }, 250).unref();
    };
    const sent = p.exec().then(
      (results) => {
        if (results === null || results.some(([err]) => err !== null)) requeue();
      },
      () => requeue(),
    );
    this.sent = this.sent.then(() => sent);
  }
}
