// A worker's side of the Redis ledger host. A command is one XADD to its
// organization's shard stream (concurrent callers in one tick share a write:
// auto-pipelining); the answer comes back on this worker's own pub/sub
// channel, pushed by the shard's owner. So a reservation costs the worker one
// Redis command and waits for one push. With billing.flush_ms > 0 the
// settlement of a call the owner holds one by one waits for nothing: its XADD is handed to the socket in the
// call's own turn of the event loop, before the reply is (as the embedded
// host hands it to its IPC pipe), and Redis's answer is checked in the
// background. Once in the stream it stays there until the shard's owner has
// written it (XACK after the journal), so nobody needs the actor's answer.
//
// Most calls make no round trip and no command at all: the worker reserves
// them from its allotments (../allotments.ts), granted by the shard's owner
// along with the reservations it does send, and settles them itself
// (../worker-books.ts: its books' file, then its own COPY to PostgreSQL). The
// owner hears what they spent per batch, once the batch is in the store (a
// 'spent' command per shard: an owner that takes the shard over loads the
// store and finds there every batch its predecessor was told of); an
// allotment goes back by a 'retired' command sent after the batches holding
// its calls (docs/billing.md, "Allotments"). What a gone worker's file holds
// is written by its instance's primary (host.ts), or at that instance's next
// start if the whole host went down.
//
// When Redis cannot be reached a reservation fails at once (the caller
// answers 503: no unbilled traffic). A settlement, though, is money already
// spent: if it cannot reach the actor, the worker writes its charge and usage
// row to PostgreSQL itself, with the very statement the journal uses (keyed by
// request id, so the actor's own write, should the command still arrive, is a
// no-op), then sends the settlement again marked `check` once Redis answers:
// the actor closes the hold and counts the charge only as the store has it.
import { randomUUID } from 'node:crypto';
import type { RedisLike as Redis } from './connection.js'; // one server, or a Redis Cluster
import type { Logger } from '../../log/logger.js';
import { createPool, type Pool } from '../../store/pool.js';
import { Allotments } from '../allotments.js';
import { NoAnswer, NotSent, ShardAsks } from './asks.js';
import type { AccountView, Allotted, CreditCommand, CreditReply, FoldedCommand, LedgerClient, ProgressCommand, ReleaseCommand, ReserveReply, ReserveRequest, RetiredCommand, SettleCommand, SpentReport, UsageRow } from '../protocol.js';
import { PgLedgerStore } from '../store.js';
import { OwnBooks } from './own-books.js';
import { onNodeLost, redisConnection } from './connection.js';
import { listenForReplies } from './pubsub.js';
import { SHARDS, shardOf, type Envelope, type RedisKeys } from './keys.js';

/** A reservation stands between the caller and its first byte: fail fast (the caller answers 503). */
const RESERVE_TIMEOUT_MS = 3000;
/** With flush_ms = 0 the actor answers after the write, which it caps at 10 s (with flush_ms > 0 nobody waits). */
const SETTLE_TIMEOUT_DURABLE_MS = 12_000;
const [CONSOLE_TIMEOUT_MS, RELEASE_RETRY_MS] = [10_000, 1000];
/**
 * A settlement that may have reached Redis is written directly no sooner than
 * this after it was sent, so that the actor can tell by its age
 * (SETTLE_CHECK_AFTER_MS, late-checks.ts) that another writer may have stored it.
 */
const DIRECT_WRITE_AFTER_MS = 2000;
/**
 * A one-way settlement is kept this long (one to two of these) after it was
 * sent: should the connection drop meanwhile, Redis may have lost it unread
 * (restarted empty), so it is sent again, marked check, on reconnecting. An
 * owner reads within milliseconds, or within a takeover (2–2.5 s); kept as
 * the command's text, a few MB at most at thousands of calls per second.
 */
const RESEND_WINDOW_MS = 2000;
/** How long a worker's first commands wait for its reply channel and command connection before answering 503. */
const FIRST_SUBSCRIPTION_WAIT_MS = 1000;

export interface RedisClientOptions {
  url: string;
  keys: RedisKeys;
  /** This worker as a hold owner: `<instance id>/<pid>`. */
  owner: string;
  holdLeaseMs: number;
  holdMaxMs: number;
  flushMs: number;
  /** billing.allotment_calls: how many calls an allotment holds; 0, none (every call reserves through the shard's owner). */
  allotmentCalls: number;
  /** The shared PostgreSQL: this worker's books, and settlements the actor cannot be reached for. */
  databaseUrl: string;
  /** billing.journal_max_lag_ms: past it, calls from allotments wait for this worker's books to reach the store. */
  journalMaxLagMs: number;
  /** Where this worker's books' file goes (its primary's, ../books-replay.ts). */
  booksDir: string;
  logger: Logger;
}

export class RedisLedgerClient implements LedgerClient {
  readonly owner: string;
  private readonly commands: Redis;
  private readonly replies: Redis;
  private subscribed = false;
  /**
   * The first subscription and the command connection's first readiness: a
   * worker's first commands wait for both (briefly) instead of failing — the
   * command connection has no offline queue, and it may still be handshaking
   * when the subscription is made.
   */
  private readonly firstConnections: Promise<unknown>;
  private everConnected = false;
  /** Commands that wait for the owner's answer, and the answers (and recalls) pushed on this worker's channel. */
  private readonly asks: ShardAsks;
  /** Reservations that never reached Redis: their release has nothing to void. */
  private readonly unsent = new Set<string>();
  /** Releases (and settlements written directly) to deliver once Redis answers again, with when they were first asked. */
  private readonly releases = new Map<string, { env: Envelope; orgId: string; requestId: string; since: number }>();
  private readonly timers: NodeJS.Timeout[] = [];
  /** One-way settlements whose XADD Redis has not answered yet (or that are being written directly). */
  private readonly handedOff = new Set<Promise<void>>();
  /** One-way settlements (their XADD's text) of this window and the one before: see RESEND_WINDOW_MS. */
  private sentRecently: string[] = [];
  private sentBefore: string[] = [];
  private readonly pool: Pool;
  private readonly allotments: Allotments;
  /** The calls this worker settles itself (those from its allotments): own-books.ts. */
  private readonly own: OwnBooks;

  constructor(private readonly opts: RedisClientOptions) {
    this.owner = opts.owner;
    this.pool = createPool(opts.databaseUrl, 2);
    this.own = new OwnBooks({ pool: this.pool, booksDir: opts.booksDir, flushMs: opts.flushMs, journalMaxLagMs: opts.journalMaxLagMs, send: (op, orgId, key, payload) => this.queue(op, orgId, key, payload), logger: opts.logger });
    // Topped up before they run dry, so that under load the calls behind find them full rather than each asking the owner.
    this.allotments = new Allotments(this.owner, opts.allotmentCalls, (cmd) => this.own.retire(cmd), Date.now, (cmd) => this.asks.ask<Allotted | null>('allot', shardOf(cmd.orgId), cmd, RESERVE_TIMEOUT_MS));
    this.commands = redisConnection(opts.url, 'commands', `tollgate-worker-${process.pid}`, opts.logger);
    this.replies = redisConnection(opts.url, 'replies', `tollgate-replies-${process.pid}`, opts.logger);
    this.asks = new ShardAsks(this.commands, opts.keys, this.owner, () => this.unready(), (id, orgId) => this.allotments.recall(id, orgId));
    this.replies.on('close', () => (this.subscribed = false));
    this.replies.on('ready', () => (this.subscribed = true));
    const subscription = listenForReplies(this.replies, opts.keys.replyChannels(opts.owner), (text) => this.asks.answer(text)).then(
      () => (this.subscribed = true),
      () => {},
    );
    const commandsReady = new Promise<void>((resolve) => this.commands.once('ready', () => resolve()));
    this.firstConnections = Promise.all([subscription, commandsReady]).then(() => (this.everConnected = true));
    // A third of the lease: two heartbeats can be lost or late before this worker's holds go.
    const beat = (): void => void this.commands.zadd(opts.keys.beats, Date.now(), this.owner).catch(() => {});
    beat();
    this.timers.push(setInterval(beat, Math.max(10, Math.floor(opts.holdLeaseMs / 3))));
    this.timers.push(setInterval(() => this.retryReleases(), RELEASE_RETRY_MS));
    this.timers.push(
      setInterval(() => {
        // Not while the connection is down: a failover (Sentinel) can lose what the old primary acknowledged but had not
        // yet copied to its replica, however long the promotion takes; all of it is sent again on reconnecting.
        if (this.commands.status !== 'ready') return;
        this.sentBefore = this.sentRecently;
        this.sentRecently = [];
      }, RESEND_WINDOW_MS),
    );
    this.commands.on('ready', () => {
      if (this.everConnected) this.resendRecent();
    });
    // A Cluster stays ready when one primary dies; what that primary took and had not copied goes again (check).
    onNodeLost(this.commands, () => this.resendRecent());
    for (const t of this.timers) t.unref();
  }

  reserveHere(req: ReserveRequest): boolean {
    return req.keyQuota === undefined && !this.own.gate.closed && this.allotments.take(req);
  }

  async reserve(req: ReserveRequest): Promise<ReserveReply> {
    if (this.own.gate.closed) await this.own.gate.wait(); // the store is behind this worker's books (../store-gate.ts)
    try {
      return await this.allotments.reserve(req, (cmd) => this.asks.ask<ReserveReply>('reserve', shardOf(req.orgId), cmd, RESERVE_TIMEOUT_MS));
    } catch (err) {
      if (err instanceof NotSent) {
        if (this.unsent.size > 10_000) this.unsent.clear();
        this.unsent.add(req.requestId);
      }
      throw err;
    }
  }

  async settle(cmd: SettleCommand): Promise<void> {
    const rid = cmd.usage.requestId;
    const here = this.allotments.settleHere(rid);
    if (here !== null) return this.own.books.settle(cmd.usage, here.id, here.amount);
    this.own.books.forget(rid); // its progress went to the owner with its allotment's retirement
    // A call reserved from an allotment names it, on every path (a retry, a direct write's later check), so the owner takes its money from there.
    const sent = this.allotments.settlement(cmd);
    if (this.opts.flushMs > 0 && (await this.connected())) return this.handOff(sent);
    const sentAt = Date.now();
    try {
      await this.asks.ask('settle', shardOf(cmd.usage.orgId), sent, SETTLE_TIMEOUT_DURABLE_MS);
    } catch (err) {
      // The actor answered with an error (its store is failing): the caller retries through it.
      if (!(err instanceof NotSent) && !(err instanceof NoAnswer)) throw err;
      await this.settleDirectly(sent, err instanceof NoAnswer ? sentAt : null);
    } finally {
      this.allotments.finish(rid);
    }
  }

  /** Every settlement handed off so far is in Redis or in the store (or given up on and logged). */
  async delivered(): Promise<void> {
    while (this.handedOff.size > 0) await Promise.allSettled([...this.handedOff]);
  }

  /**
   * One way: resolves once the XADD is on the socket (the auto-pipeline
   * writes in the check phase of this turn; our setImmediate runs after it),
   * so a crash of this process after that loses nothing, as with the embedded
   * host's pipe. Redis not taking it (refused, or no answer within the
   * connection's command timeout) is the NoAnswer case of the durable path.
   */
  private handOff(cmd: SettleCommand): Promise<void> {
    const env: Envelope = { o: 'settle', i: 0, r: null, p: cmd };
    const text = JSON.stringify(env);
    const sentAt = Date.now();
    const done: Promise<void> = this.commands
      .xadd(this.opts.keys.stream(shardOf(cmd.usage.orgId)), '*', 'm', text)
      .then(
        () => {},
        () => this.settleDirectly(cmd, sentAt),
      )
      .catch((err: Error) => {
        // The store refused too: the settlement stays queued for Redis, and the actor writes it when it arrives.
        this.opts.logger.error({ rid: cmd.usage.requestId, org: cmd.usage.orgId, err: err.message }, 'ledger: settlement neither sent nor written; queued for Redis');
        this.queue('settle', cmd.usage.orgId, cmd.usage.requestId, { ...cmd, check: true } satisfies SettleCommand);
      })
      .finally(() => {
        this.handedOff.delete(done);
        this.allotments.finish(cmd.usage.requestId);
      });
    this.handedOff.add(done);
    this.sentRecently.push(text);
    return new Promise((resolve) => setImmediate(resolve));
  }

  /**
   * Back after a dropped connection: the settlements of the last window may
   * be gone unread with Redis's data. Sent again marked check, they change
   * nothing where the first one arrived (the actor finds the request closed
   * or the charge in the store) and settle the call where it did not.
   */
  private resendRecent(): void {
    const sent = [...this.sentBefore, ...this.sentRecently];
    this.sentBefore = [];
    this.sentRecently = [];
    for (const text of sent) {
      const cmd = (JSON.parse(text) as Envelope).p as SettleCommand;
      this.queue('settle', cmd.usage.orgId, cmd.usage.requestId, { ...cmd, check: true } satisfies SettleCommand);
    }
  }

  /**
   * The actor could not be reached: the journal's statement straight to the
   * store, then the settlement again (marked check) once Redis answers.
   * `sentAt`: when it may have reached Redis (null: it cannot have).
   */
  private async settleDirectly(cmd: SettleCommand, sentAt: number | null): Promise<void> {
    const wait = sentAt === null ? 0 : sentAt + DIRECT_WRITE_AFTER_MS - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    await this.settleInStore(cmd.usage);
    this.queue('settle', cmd.usage.orgId, cmd.usage.requestId, { ...cmd, check: true } satisfies SettleCommand);
  }

  /** Best effort, nobody waits: a lost progress only means the previous one (or none) is what a takeover settles on. */
  progress(cmd: ProgressCommand): void {
    // A stream from an allotment keeps its progress in this worker's books; any other tells the owner.
    const here = this.allotments.progressHere(cmd.usage.requestId);
    if (here !== null) return this.own.books.progress(cmd.usage, here.id, here.amount);
    if (this.commands.status !== 'ready') return;
    const env: Envelope = { o: 'progress', i: 0, r: null, p: this.allotments.progress(cmd) };
    this.commands.xadd(this.opts.keys.stream(shardOf(cmd.usage.orgId)), '*', 'm', JSON.stringify(env)).catch(() => {});
  }

  /** Queued in the stream behind everything the worker sent before; nobody waits for the actor. */
  async release(cmd: ReleaseCommand): Promise<void> {
    this.own.books.forget(cmd.requestId);
    const sent = this.allotments.release(cmd);
    if (sent.allotment !== undefined) this.allotments.finish(cmd.requestId);
    else if (this.unsent.delete(cmd.requestId)) return;
    this.queue('release', cmd.orgId, cmd.requestId, sent);
  }

  credit(cmd: CreditCommand): Promise<CreditReply> {
    // The entry id must not change if the command is applied again after a takeover: name it here.
    return this.asks.ask<CreditReply>('credit', shardOf(cmd.orgId), { ...cmd, key: cmd.key ?? randomUUID() }, CONSOLE_TIMEOUT_MS);
  }

  async account(orgId: string): Promise<AccountView | null> {
    return (await this.asks.ask<AccountView | null>('account', shardOf(orgId), orgId, CONSOLE_TIMEOUT_MS)) ?? null;
  }

  async refresh(orgId: string): Promise<void> {
    await this.asks.ask('refresh', shardOf(orgId), orgId, CONSOLE_TIMEOUT_MS);
  }

  /** Every shard's journal, since the caller cannot say which organizations it means. */
  async sync(): Promise<void> {
    await Promise.all(Array.from({ length: SHARDS }, (_, s) => this.asks.ask('sync', s, null, CONSOLE_TIMEOUT_MS)));
  }

  /** Summed with the primary's into /metrics: this worker's books' gate. */
  gauges(): Record<string, number> {
    return this.own.gauges();
  }

  async close(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    await this.delivered();
    this.allotments.close(); // their retirements go out behind the settlements, like releases
    await this.own.close();
    await this.retryReleases();
    this.asks.close();
    // Drained: nothing of ours is held any more, so no owner needs to wait for our lease.
    await this.commands.zrem(this.opts.keys.beats, this.owner).catch(() => {});
    this.replies.disconnect();
    await this.commands.quit().catch(() => this.commands.disconnect());
    await this.pool.end().catch(() => {});
  }

  /** Whether commands can be sent now; a worker's first commands wait briefly for its first connections. */
  private async connected(): Promise<boolean> {
    if (!this.everConnected) await Promise.race([this.firstConnections, new Promise((r) => setTimeout(r, FIRST_SUBSCRIPTION_WAIT_MS))]);
    return this.commands.status === 'ready';
  }

  /** Why a command cannot be sent now (null: it can): the connection is down, or answers would find no channel. */
  private async unready(): Promise<string | null> {
    if (!(await this.connected())) return `ledger: Redis connection ${this.commands.status}`;
    return this.subscribed ? null : 'ledger: no reply channel (Redis unreachable)';
  }

  /** The journal's own statement, so whichever of the two writes lands second changes nothing. */
  private async settleInStore(usage: UsageRow): Promise<void> {
    // The actor's settlement rule (actor.ts settle): the whole charge, the part above the hold recorded as overdraft.
    const charged = Number.isSafeInteger(usage.chargedMicros) ? Math.max(0, usage.chargedMicros) : usage.reservedMicros;
    const row: UsageRow = { ...usage, chargedMicros: charged, overdraftMicros: Math.max(0, charged - usage.reservedMicros) };
    await new PgLedgerStore(this.pool).writeBatch([{ usage: row, writer: charged > 0 ? `direct:${this.owner}` : null }]);
    this.opts.logger.warn({ rid: usage.requestId, org: usage.orgId, charged }, 'ledger: actor unreachable; settlement written to the store directly');
  }

  /** A command nobody waits for, kept and sent again until Redis takes it (`requestId`: an allotment's id for a retirement). */
  private queue(op: 'release' | 'settle' | 'retired' | 'spent' | 'folded', orgId: string, requestId: string, payload: ReleaseCommand | SettleCommand | RetiredCommand | SpentReport | FoldedCommand): void {
    const env: Envelope = { o: op, i: 0, r: null, p: payload };
    this.commands.xadd(this.opts.keys.stream(shardOf(orgId)), '*', 'm', JSON.stringify(env)).catch(() => {
      if (!this.releases.has(requestId)) this.releases.set(requestId, { env, orgId, requestId, since: Date.now() });
    });
  }

  /** Releases that could not be sent; past the hold's maximum age there is nothing left to void. */
  private async retryReleases(): Promise<void> {
    if (this.releases.size === 0 || this.commands.status !== 'ready') return;
    const now = Date.now();
    const batch = [...this.releases.values()];
    this.releases.clear();
    await Promise.all(
      batch
        .filter((r) => now - r.since < this.opts.holdMaxMs)
        .map((r) =>
          this.commands.xadd(this.opts.keys.stream(shardOf(r.orgId)), '*', 'm', JSON.stringify(r.env)).catch(() => {
            this.releases.set(r.requestId, r);
          }),
        ),
    );
  }
}

