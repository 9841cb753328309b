// The Redis-streams ledger host, in each instance's cluster primary. Every
// TICK_MS one Lua script renews this instance's shard leases, registers it as
// live and acquires free shards up to its fair share; each owned shard runs a
// ShardActor (its own Ledger, reading its stream). An instance over its fair
// share (another one joined) hands one shard off per tick: it stops reading,
// lets its writes land, then deletes its lease so the next owner adopts the
// mirrored holds. Hold owners (workers, anywhere) heartbeat into a sorted
// set that this host polls, so a dead instance's holds go one lease after its
// last beat, whichever instance owns their shard.
import type { RedisLike as Redis } from './connection.js'; // one server, or a Redis Cluster
import type { ChangeBus } from '../../bus/bus.js';
import type { Logger } from '../../log/logger.js';
import type { Pool } from '../../store/pool.js';
import { Ledger, type LedgerSettings } from '../ledger.js';
import type { LedgerStats } from '../stats.js';
import { PgLedgerStore } from '../store.js';
import { redisConnection } from './connection.js';
import { shardOf, type RedisKeys } from './keys.js';
import type { AccountView } from '../protocol.js';
import { LEASE_MS, releaseLease, tick, TICK_MS, validUntil, type ShardStatus } from './ownership.js';
import { GoneWriters } from './gone-writers.js';
import { ShardActor } from './shard.js';

/** A hold owner whose heartbeat has not moved for this long is forgotten (its holds went long ago). */
const BEAT_FORGET_MS = 10 * 60_000;

export interface RedisHostOptions {
  url: string;
  keys: RedisKeys;
  instanceId: string;
  pool: Pool;
  settings: LedgerSettings;
  /** Where this instance's workers keep their books' files (../books-replay.ts). */
  booksDir: string;
  bus: ChangeBus;
  logger: Logger;
}

export interface ShardStats {
  shardsOwned: number;
  shardsAcquired: number;
  shardsTakenOver: number;
  shardsLost: number;
}

interface Owned {
  actor: ShardActor;
  started: boolean;
  fresh: boolean;
  starting: Promise<void> | null;
  leaving: boolean;
  handingOff: Promise<void> | null;
}

export class RedisLedgerHost {
  readonly kind = 'redis' as const;
  private readonly commands: Redis;
  /** Lease rounds only: their WAIT for a replica (ownership.ts) must hold up nothing else. */
  private readonly leases: Redis;
  private readonly owned = new Map<number, Owned>();
  private readonly timers: NodeJS.Timeout[] = [];
  private ticking = false;
  private closing = false;
  /** When a tick last failed: after an outage, shards we have no memory of wait a lease for their previous owner to come back. */
  private lastFailure = 0;
  private everTicked = false;
  private readonly seenBeats = new Map<string, { score: number; at: number }>();
  /** Resolved once every shard has an owner and ours are being served: see ready(). */
  private readonly serving: Promise<void>;
  private markServing: () => void = () => {};
  private isServing = false;
  /** Shards acquired (any), acquired from another live-or-dead instance (takeovers), and lost, since start. */
  private readonly moves = { shardsAcquired: 0, shardsTakenOver: 0, shardsLost: 0 };
  /** What this instance's gone workers left in their books (gone-writers.ts). */
  private readonly goneWriters: GoneWriters;

  constructor(private readonly opts: RedisHostOptions) {
    this.commands = redisConnection(opts.url, 'commands', 'tollgate-ledger-host', opts.logger);
    this.leases = redisConnection(opts.url, 'commands', 'tollgate-ledger-leases', opts.logger);
    this.goneWriters = new GoneWriters({ store: new PgLedgerStore(opts.pool), commands: this.commands, keys: opts.keys, booksDir: opts.booksDir, logger: opts.logger });
    this.serving = new Promise((resolve) => (this.markServing = resolve));
    this.timers.push(setInterval(() => void this.tick(), TICK_MS));
    this.timers.push(setInterval(() => void this.pollBeats().catch(() => {}), Math.min(1000, Math.max(20, Math.floor(opts.settings.holdLeaseMs / 4)))));
    for (const t of this.timers) t.unref();
    opts.bus.subscribe('orgs', (orgId) => {
      for (const o of this.owned.values()) void o.actor.ledger.refresh(orgId).catch(() => {});
    });
    opts.logger.info({ instance: opts.instanceId, prefix: opts.keys.prefix }, 'ledger: Redis streams host starting');
    // The first round as soon as Redis answers, not at the next tick.
    this.leases.once('ready', () => void this.tick());
  }

  /**
   * Resolves true once this instance can take calls: a lease round found every
   * shard owned — those it is entitled to now by this instance, their actors
   * reading, the rest by other instances (a shard still moving here from
   * another instance is served there until it does). Alone, that is all 16.
   * Until then a command for an unowned shard would wait in its stream, and a
   * reservation past its deadline is refused with 503. False when `timeoutMs`
   * ran out first (Redis not answering): calls answer 503 until it does.
   */
  async ready(timeoutMs?: number): Promise<boolean> {
    if (timeoutMs === undefined) {
      await this.serving;
      return true;
    }
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
    try {
      return await Promise.race([this.serving.then(() => true), late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** What a crash of this whole instance left in its workers' books, written before they are forked again (throws if the store cannot take it). */
  leftAtStart(): Promise<void> {
    return this.goneWriters.leftAtStart();
  }

  /** Worker `pid` of this instance exited: what its books hold is written and told (gone-writers.ts). */
  workerGone(pid: number): void {
    this.goneWriters.workerGone(pid);
  }

  /** An organization as this instance's memory has it, when its shard is served here (null otherwise): no Redis round trip. */
  localAccount(orgId: string): Promise<AccountView | null> {
    const o = this.owned.get(shardOf(orgId));
    if (o === undefined || !o.started || o.leaving) return Promise.resolve(null);
    return o.actor.ledger.account(orgId);
  }

  /** The shards this instance serves now. */
  shards(): number[] {
    return [...this.owned.entries()].filter(([, o]) => o.started && !o.leaving).map(([i]) => i);
  }

  /** The shards' ledgers summed (a shard's counts since start go with it when it leaves), and this instance's shard moves. */
  stats(): LedgerStats & ShardStats {
    const total = { actors: 0, owners: 0, openHolds: 0, expiredHolds: 0, heldMicros: 0, backlog: 0, flushLagMs: 0, overdraftMicros: 0, overdraftSettlements: 0, progressSettled: 0, workerSettled: 0, reservations: 0, grants: 0, oldestHoldMs: 0, allotments: 0, storeWaits: 0, storeRefusals: 0, storeCopyWrites: 0, storeStatementWrites: 0 };
    for (const o of this.owned.values()) {
      const s = o.actor.ledger.stats();
      for (const k of Object.keys(total) as Array<keyof LedgerStats>) total[k] += s[k];
      total.owners = Math.max(total.owners, s.owners);
      total.flushLagMs = Math.max(total.flushLagMs, s.flushLagMs);
      total.oldestHoldMs = Math.max(total.oldestHoldMs, s.oldestHoldMs);
    }
    return { ...total, shardsOwned: this.shards().length, ...this.moves };
  }

  /** Hands every shard off (writes done, leases deleted) so the other instances take over at once. */
  async close(): Promise<void> {
    this.closing = true;
    for (const t of this.timers) clearInterval(t);
    await Promise.allSettled([...this.owned.values()].map((o) => o.starting));
    await Promise.all([...this.owned.keys()].map((i) => this.handOff(i)));
    await this.goneWriters.close();
    // Leave the register too, so the others' fair share grows now rather than a lease from now.
    await this.commands.zrem(this.opts.keys.instances, this.opts.instanceId).catch(() => {});
    await this.commands.quit().catch(() => this.commands.disconnect());
    await this.leases.quit().catch(() => this.leases.disconnect());
  }

  private async tick(): Promise<void> {
    if (this.ticking || this.closing) return;
    this.ticking = true;
    const sentAt = Date.now();
    try {
      const mayAcquire = sentAt - this.lastFailure > LEASE_MS;
      const held = new Set(this.owned.keys());
      const result = await tick(this.leases, this.opts.keys, this.opts.instanceId, held, mayAcquire);
      if (this.closing) return;
      const acquired: number[] = [];
      result.shards.forEach((status, shard) => {
        // Handed off or dropped while this round was in flight, which re-took its lease: give it back.
        if (held.has(shard) && !this.owned.has(shard)) {
          if (status.kind === 'acquired' || status.kind === 'kept') void releaseLease(this.commands, this.opts.keys, this.opts.instanceId, shard).catch(() => {});
          return;
        }
        this.follow(shard, status, sentAt, acquired);
      });
      if (acquired.length > 0) this.opts.logger.info({ shards: acquired, live: result.live, fair: result.fair }, 'ledger: shards acquired');
      this.rebalance(result.fair);
      this.everTicked = true;
      if (!this.isServing && result.shards.every((status) => status.kind !== 'none')) void this.checkServing();
    } catch (err) {
      // Before the first success this is only Redis not answering yet: no memory of any shard to protect.
      if (!this.everTicked) return;
      if (this.lastFailure === 0 || Date.now() - this.lastFailure > 10_000) {
        this.opts.logger.warn({ err: (err as Error).message }, 'ledger: cannot renew shard leases; commands wait until Redis answers');
      }
      this.lastFailure = Date.now();
    } finally {
      this.ticking = false;
    }
  }

  private follow(shard: number, status: ShardStatus, sentAt: number, acquired: number[]): void {
    const o = this.owned.get(shard);
    switch (status.kind) {
      case 'kept':
        if (o === undefined) return;
        o.actor.validUntil = validUntil(sentAt);
        if (!o.started && !o.leaving) this.begin(shard, o);
        return;
      case 'acquired': {
        if (o?.leaving === true) {
          o.actor.validUntil = validUntil(sentAt); // being handed off: keep the lease until that is done
          return;
        }
        // Our memory of the shard is the truth only if nobody else acquired it since we did.
        if (o !== undefined && (status.previous === this.opts.instanceId || status.previous === '')) {
          this.opts.logger.info({ shard }, 'ledger: shard lease re-taken after a lapse; its holds and balances stay as this instance knows them');
          o.actor.validUntil = validUntil(sentAt);
          o.started = false;
          this.begin(shard, o);
          return;
        }
        if (o !== undefined) this.drop(shard, o, 'taken by another instance meanwhile');
        this.moves.shardsAcquired++;
        if (status.previous !== '' && status.previous !== this.opts.instanceId) this.moves.shardsTakenOver++;
        const fresh: Owned = { actor: this.newActor(shard), started: false, fresh: true, starting: null, leaving: false, handingOff: null };
        fresh.actor.validUntil = validUntil(sentAt);
        this.owned.set(shard, fresh);
        acquired.push(shard);
        this.begin(shard, fresh);
        return;
      }
      case 'lost':
        if (o !== undefined) this.drop(shard, o, 'lease lost');
        return;
      case 'other':
      case 'none':
        return;
    }
  }

  /** Every shard has an owner: ready once ours have started (a failed start is retried next tick, and checked again). */
  private async checkServing(): Promise<void> {
    await Promise.allSettled([...this.owned.values()].map((o) => o.starting));
    if (this.isServing || ![...this.owned.values()].every((o) => o.started || o.leaving)) return;
    this.isServing = true;
    this.opts.logger.info({ shards: this.shards() }, 'ledger: every shard has an owner; serving');
    this.markServing();
  }

  private newActor(shard: number): ShardActor {
    const ledger = new Ledger(new PgLedgerStore(this.opts.pool), this.opts.settings, this.opts.logger);
    return new ShardActor({ shard, keys: this.opts.keys, me: this.opts.instanceId, url: this.opts.url, commands: this.commands, logger: this.opts.logger }, ledger);
  }

  private begin(shard: number, o: Owned): void {
    if (o.starting !== null) return;
    o.starting = o.actor
      .start(o.fresh)
      .then(
        () => {
          o.started = true;
          o.fresh = false;
        },
        (err: Error) => this.opts.logger.warn({ shard, err: err.message }, 'ledger: shard not started yet; retrying'),
      )
      .finally(() => (o.starting = null));
  }

  /** Over the fair share (an instance joined): the excess goes, to be acquired by instances with room. */
  private rebalance(fair: number): void {
    const serving = [...this.owned.entries()].filter(([, o]) => !o.leaving);
    if (serving.length <= fair || serving.some(([, o]) => o.starting !== null)) return;
    if ([...this.owned.values()].some((o) => o.leaving)) return;
    // The shards with the fewest open holds move: the least to adopt.
    serving.sort(([, a], [, b]) => a.actor.ledger.stats().openHolds - b.actor.ledger.stats().openHolds);
    for (const [shard] of serving.slice(0, serving.length - fair)) void this.handOff(shard);
  }

  private handOff(shard: number): Promise<void> {
    const o = this.owned.get(shard);
    if (o === undefined) return Promise.resolve();
    o.handingOff ??= this.leave(shard, o);
    return o.handingOff;
  }

  private async leave(shard: number, o: Owned): Promise<void> {
    o.leaving = true;
    await o.actor.stop();
    // Unless the lease was lost meanwhile (and the shard perhaps acquired afresh): then it is not ours to give.
    if (this.owned.get(shard) !== o) return;
    await releaseLease(this.commands, this.opts.keys, this.opts.instanceId, shard).catch(() => {});
    this.owned.delete(shard);
    this.opts.logger.info({ shard }, 'ledger: shard handed off');
  }

  private drop(shard: number, o: Owned, why: string): void {
    this.owned.delete(shard);
    this.moves.shardsLost++;
    if (o.leaving) {
      o.actor.ledger.onHoldExpired = null; // its hand-off is stopping it; the mirror is the new owner's now
      return;
    }
    this.opts.logger.warn({ shard, why }, 'ledger: shard no longer ours');
    void o.actor.stop(true);
  }

  /** A hold owner is alive when its score moves (whatever its clock says): renew its holds on every shard. */
  private async pollBeats(): Promise<void> {
    const flat = await this.commands.zrange(this.opts.keys.beats, '0', '-1', 'WITHSCORES');
    const now = Date.now();
    for (let j = 0; j + 1 < flat.length; j += 2) {
      const owner = flat[j];
      const score = Number(flat[j + 1]);
      const seen = this.seenBeats.get(owner);
      if (seen === undefined || score !== seen.score) {
        this.seenBeats.set(owner, { score, at: now });
        if (seen !== undefined) for (const o of this.owned.values()) o.actor.ledger.heartbeat(owner);
      } else if (now - seen.at > BEAT_FORGET_MS) {
        this.seenBeats.delete(owner);
        await this.commands.zrem(this.opts.keys.beats, owner);
      }
    }
  }
}
