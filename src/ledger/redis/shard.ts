// One shard this instance owns: reads its stream through the consumer group,
// hands every command to the shard's Ledger in stream order, and answers.
//
// Per batch of commands the owner pays one blocking read and one pipeline
// (the Outbox: hold mirror writes, XACKs, replies, in that order), however
// many commands the batch holds. A command is acknowledged (XACK) once its effect is safe
// without this process: a reservation or release once its hold is mirrored
// (same pipeline; a grant's allotment too), an allotment's retirement once
// the calls it carved into holds are, a settlement only once its charge and
// usage row are in PostgreSQL. So if this instance dies, the next owner adopts the mirrored
// holds, claims what was never acknowledged (XAUTOCLAIM) and applies it
// again: idempotent by request id, so nothing is charged twice or lost.
import type { RedisLike as Redis } from './connection.js'; // one server, or a Redis Cluster
import type { Logger } from '../../log/logger.js';
import type { Ledger } from '../ledger.js';
import type { AllotCommand, CreditCommand, FoldedCommand, ProgressCommand, ReleaseCommand, ReserveCommand, RetiredCommand, SettleCommand, SpentReport } from '../protocol.js';
import type { HoldRecord } from '../records.js';
import { redisConnection, sleep } from './connection.js';
import { decodeHold, encodeHold, GROUP, type Envelope, type RedisKeys } from './keys.js';
import { Outbox } from './outbox.js';
import { housekeeping } from './housekeeping.js';
import { loopMonitor } from '../../metrics/event-loop.js';

export interface ShardContext {
  shard: number;
  keys: RedisKeys;
  /** This instance: its consumer name in the group. */
  me: string;
  url: string;
  /** The instance's shared command connection (pipelines). */
  commands: Redis;
  logger: Logger;
}

/** Entries per read: bounds one batch's work and its pipeline. */
const BATCH = 512;
const BLOCK_MAX_MS = 1000;
/** An entry pending this long (another consumer's, or ours and forgotten) is claimed and applied here. */
const STRAY_IDLE_MS = 2000;
const HOUSEKEEPING_MS = 5000;

type Entry = [id: string, fields: string[] | null];

export class ShardActor {
  /** Commands are applied only before this (ms since epoch); the host moves it at every renewal. */
  validUntil = 0;
  private readonly stream: string;
  private readonly holdsKey: string;
  private readonly reader: Redis;
  private running = false;
  private loopDone: Promise<void> = Promise.resolve();
  /** Our own pending entries must be re-read before new ones (a batch arrived after our deadline). */
  private reclaim = false;
  /** While start() rewrites the mirror and claims, the loop applies nothing (the mirror must match memory). */
  private starting = false;
  /** Entry ids being applied or waiting for their write: a claim must not apply them twice. */
  private readonly inflight = new Set<string>();
  private readonly work = new Set<Promise<void>>();
  /** Request ids settled here whose write has not landed: their holds stay mirrored until it has. */
  private readonly awaitingWrite = new Set<string>();
  private readonly outbox: Outbox;
  private lastHousekeeping = Date.now();

  constructor(
    private readonly ctx: ShardContext,
    readonly ledger: Ledger,
  ) {
    this.stream = ctx.keys.stream(ctx.shard);
    this.holdsKey = ctx.keys.holds(ctx.shard);
    this.outbox = new Outbox(ctx.commands, this.stream, this.holdsKey, ctx.keys.cluster);
    this.reader = redisConnection(ctx.url, 'reader', `tollgate-shard-${ctx.shard}`, ctx.logger);
    ledger.onHoldExpired = (hold) => this.mirror(hold.requestId, null);
    // A recall reaches the worker on its reply channel; it answers with a 'retired' command in its shard's stream.
    ledger.recalls.recaller = (owner, id, orgId) => {
      this.outbox.reply(ctx.keys.reply(owner, ctx.shard), { i: 0, recall: id, org: orgId });
      return true;
    };
  }

  get shard(): number {
    return this.ctx.shard;
  }

  /**
   * Starts (or resumes) applying commands. `fresh`: this instance has no
   * memory of the shard, so it adopts the holds its predecessor mirrored;
   * otherwise its memory is the truth. Either way the mirror is rewritten from
   * memory, then everything pending is claimed and applied before new entries.
   */
  async start(fresh: boolean): Promise<void> {
    this.starting = true;
    try {
      await this.begin(fresh);
    } finally {
      this.starting = false;
    }
    if (!this.running) {
      this.running = true;
      this.outbox.active = true;
      this.loopDone = this.loop();
    }
  }

  private async begin(fresh: boolean): Promise<void> {
    await this.ensureGroup();
    if (fresh) {
      const mirrored = await this.ctx.commands.hgetall(this.holdsKey);
      const holds = Object.entries(mirrored).map(([rid, v]) => decodeHold(rid, v)).filter((h): h is HoldRecord => h !== null);
      const adopted = await this.ledger.adopt(holds);
      if (adopted > 0) this.ctx.logger.info({ shard: this.shard, holds: adopted }, 'ledger: adopted the holds of the previous owner');
    }
    // The mirror becomes what memory holds: plus holds settled but not yet written (the next owner would settle them
    // again), minus entries whose removal was lost while Redis was away (or that were emptied with it).
    const open = this.ledger.openHolds();
    const keep = new Set([...open.map((h) => h.requestId), ...this.awaitingWrite]);
    const stale = (await this.ctx.commands.hkeys(this.holdsKey)).filter((rid) => !keep.has(rid));
    const p = this.ctx.commands.pipeline();
    if (open.length > 0) p.hset(this.holdsKey, Object.fromEntries(open.map((h) => [h.requestId, encodeHold(h)])));
    if (stale.length > 0) p.hdel(this.holdsKey, ...stale);
    await p.exec();
    await this.claim(0);
  }

  /**
   * Stops reading, lets applied commands finish and their writes land
   * (bounded), sends what is queued. `lost`: another instance owns the shard
   * now and has adopted the mirror, which this one must no longer touch.
   */
  async stop(lost = false): Promise<void> {
    this.running = false;
    this.outbox.active = false;
    this.validUntil = 0;
    if (lost) this.ledger.onHoldExpired = null;
    this.reader.disconnect();
    await this.loopDone;
    await Promise.race([Promise.allSettled([...this.work]), sleep(200)]);
    await this.ledger.close();
    // Settlements wait for their write before their XACK; a store that does not answer leaves them to the next owner.
    await Promise.race([Promise.allSettled([...this.work]), sleep(1000)]);
    await this.outbox.drain();
  }

  private async ensureGroup(): Promise<void> {
    try {
      await this.ctx.commands.xgroup('CREATE', this.stream, GROUP, '0', 'MKSTREAM');
    } catch (err) {
      if (!String((err as Error).message).startsWith('BUSYGROUP')) throw err;
    }
  }

  private async loop(): Promise<void> {
    while (this.running) {
      const left = this.validUntil - Date.now();
      if (left < 50 || this.starting) {
        await sleep(25);
        continue;
      }
      try {
        if (this.reclaim) {
          this.reclaim = false;
          await this.claim(0);
        }
        // Never blocked past the deadline: a read cannot take entries for an owner that has already stopped.
        const res = (await this.reader.xreadgroup('GROUP', GROUP, this.ctx.me, 'COUNT', BATCH, 'BLOCK', Math.min(BLOCK_MAX_MS, left - 25), 'STREAMS', this.stream, '>')) as
          | Array<[string, Entry[]]>
          | null;
        if (res !== null && res.length > 0) {
          if (Date.now() < this.validUntil && !this.starting) this.take(res[0][1]);
          else this.reclaim = true; // left pending: read again, in order, once the lease is renewed
        }
      } catch (err) {
        if (!this.running) break;
        const message = String((err as Error).message);
        if (message.includes('NOGROUP')) await this.ensureGroup().catch(() => {});
        else await sleep(100);
        this.reclaim = true;
        continue;
      }
      if (Date.now() - this.lastHousekeeping > HOUSEKEEPING_MS) {
        this.lastHousekeeping = Date.now();
        void this.claim(STRAY_IDLE_MS)
          .then(() => housekeeping(this.ctx.commands, this.stream, this.ctx.me))
          .catch(() => {});
      }
    }
  }

  /** Applies, in id order, what is pending for this group and idle at least `minIdleMs` (0: all of it). */
  private async claim(minIdleMs: number): Promise<void> {
    let cursor = '0-0';
    do {
      if (Date.now() >= this.validUntil) {
        this.reclaim = true;
        return;
      }
      const [next, entries] = (await this.ctx.commands.xautoclaim(this.stream, GROUP, this.ctx.me, minIdleMs, cursor, 'COUNT', BATCH)) as [string, Entry[]];
      if (Date.now() >= this.validUntil) {
        this.reclaim = true; // claimed, not applied: the rest once the lease is renewed, before any new entry
        return;
      }
      this.take(entries, true);
      cursor = next;
    } while (cursor !== '0-0');
  }

  /** `claimed`: pending entries, which an earlier owner may have applied and written already. */
  private take(entries: Entry[], claimed = false): void {
    if (entries.length > 0) loopMonitor.work(); // workers' commands are this process's work (metrics/event-loop.ts); a housekeeping claim of nothing is not
    for (const [id, fields] of entries) {
      if (this.inflight.has(id)) continue;
      let env: Envelope | null = null;
      try {
        if (fields !== null && fields[0] === 'm') env = JSON.parse(fields[1]) as Envelope;
      } catch {
        env = null;
      }
      if (env === null) {
        this.ctx.logger.error({ shard: this.shard, entry: id }, 'ledger: unreadable stream entry dropped');
        this.ack(id);
        continue;
      }
      this.inflight.add(id);
      const p: Promise<void> = this.apply(id, env, claimed)
        .catch((err: Error) => {
          this.ctx.logger.error({ shard: this.shard, op: env!.o, err: err.message }, 'ledger: command failed');
          this.reply(env!, undefined, err.message);
          this.ack(id);
        })
        .finally(() => {
          this.inflight.delete(id);
          this.work.delete(p);
        });
      this.work.add(p);
    }
  }

  /** Calls the ledger before its first await, so commands reach the actors in stream order. */
  private async apply(id: string, env: Envelope, claimed: boolean): Promise<void> {
    switch (env.o) {
      case 'reserve': {
        // The caller gave up waiting (and released): a hold now would only be money nobody uses.
        if (env.x !== undefined && env.x < Date.now()) return this.ack(id);
        const cmd = env.p as ReserveCommand;
        const reply = await this.ledger.reserve(cmd);
        if (reply.ok) {
          const hold: HoldRecord = { orgId: cmd.orgId, requestId: cmd.requestId, funding: cmd.funding, amount: cmd.amount, owner: cmd.owner, createdAt: Date.now() };
          this.mirror(cmd.requestId, encodeHold(hold));
          // The allotment as it stands after this grant; the calls it pays for do not mirror it again (keys.ts encodeHold).
          const allotment = reply.allotted !== undefined ? this.ledger.openHold(cmd.orgId, cmd.allot!.id) : null;
          if (allotment !== null) this.mirror(allotment.requestId, encodeHold(allotment));
        }
        this.ack(id);
        return this.reply(env, reply);
      }
      case 'allot': {
        // A top-up asked before the allotment runs dry (AllotCommand): mirrored as it stands after the grant, as a reservation's is.
        const cmd = env.p as AllotCommand;
        const allotted = await this.ledger.allot(cmd);
        const allotment = allotted !== null ? this.ledger.openHold(cmd.orgId, cmd.allot.id) : null;
        if (allotment !== null) this.mirror(allotment.requestId, encodeHold(allotment));
        this.ack(id);
        return this.reply(env, allotted);
      }
      case 'settle': {
        const cmd = env.p as SettleCommand;
        const rid = cmd.usage.requestId;
        this.awaitingWrite.add(rid);
        try {
          await this.ledger.settle(claimed ? { ...cmd, check: true } : cmd);
          this.reply(env, null);
          // Acknowledged to the stream only once written: until then the next owner would apply it again.
          await this.ledger.written(rid);
        } finally {
          this.awaitingWrite.delete(rid);
        }
        this.mirror(rid, null);
        return this.ack(id);
      }
      case 'release': {
        const cmd = env.p as ReleaseCommand;
        await this.ledger.release(cmd);
        this.mirror(cmd.requestId, null);
        this.ack(id);
        return this.reply(env, null);
      }
      case 'progress': {
        const hold = this.ledger.progress(env.p as ProgressCommand);
        // Mirrored with the hold, so that the next owner settles on it if this stream's instance dies.
        if (hold !== null) this.mirror(hold.requestId, encodeHold(hold));
        return this.ack(id);
      }
      case 'retired': {
        const cmd = env.p as RetiredCommand;
        // Its calls still in progress are holds of their own now: mirrored, so that the next owner keeps them held.
        for (const hold of await this.ledger.retired(cmd)) this.mirror(hold.requestId, encodeHold(hold));
        this.mirror(cmd.id, null);
        return this.ack(id);
      }
      case 'spent': {
        // In the store already (a worker reports a batch once written): a takeover's load has it, so acknowledged once
        // counted. The allotments stay mirrored as granted: a next owner holds them for at least what is left of them.
        await this.ledger.spent(env.p as SpentReport);
        return this.ack(id);
      }
      case 'folded':
        await this.ledger.folded(env.p as FoldedCommand);
        return this.ack(id);
      case 'credit':
        this.reply(env, await this.ledger.credit(env.p as CreditCommand));
        return this.ack(id);
      case 'account':
        this.reply(env, await this.ledger.account(env.p as string));
        return this.ack(id);
      case 'refresh':
        await this.ledger.refresh(env.p as string);
        this.reply(env, null);
        return this.ack(id);
      case 'sync':
        await this.ledger.sync();
        this.reply(env, null);
        return this.ack(id);
      default:
        throw new Error(`unknown ledger command ${String((env as { o: unknown }).o)}`);
    }
  }

  private mirror(requestId: string, value: string | null): void {
    this.outbox.mirror(requestId, value);
  }

  private ack(id: string): void {
    this.outbox.ack(id);
  }

  private reply(env: Envelope, ok: unknown, error?: string): void {
    if (env.r !== null) this.outbox.reply(env.r, error === undefined ? { i: env.i, ok } : { i: env.i, e: error });
  }
}
