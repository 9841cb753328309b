// Names and shapes shared by both ends of the Redis ledger host: which shard
// an organization belongs to, the keys under one deployment's prefix, and the
// JSON envelope a command travels in.
//
// Keys (prefix = `tollgate:<database name>:`, so deployments with different
// databases can share one Redis without seeing each other's ledgers):
//   ledger:<n>   stream: shard n's mailbox, read by consumer group `actors`
//   own:<n>      shard n's ownership lease (value: the owning instance id, PX)
//   last:<n>     the instance that acquired shard n last (kept, no expiry)
//   holds:<n>    hash: shard n's open holds, so the next owner can adopt them
//   instances    sorted set: live instances (score: Redis time of their last tick)
//   beats        sorted set: hold owners (worker processes) and their last heartbeat
//   reply:<owner> pub/sub channel: answers to one worker's commands
//
// On a Redis Cluster (RedisKeys made for a redis-cluster:// URL) a shard's keys carry its hash tag,
// `{s<n>}`, so that everything one script or pipeline touches together is in
// one slot, and the 16 shards' slots spread over the primaries (6/4/6 over
// three with the slot ranges redis-cli gives them): ledger:{s3}, own:{s3},
// last:{s3}, holds:{s3}. A worker's answers come on one channel per shard,
// reply:<owner>:{s3} (sharded pub/sub: SSUBSCRIBE/SPUBLISH), so an owner's
// answers travel in the same pipeline as its shard's writes, and to the same
// primary. instances and beats are single keys, wherever they hash. On one
// server or Sentinel the names stay as above: nothing to migrate.
import type { UsageRow } from '../protocol.js';
import type { HoldRecord } from '../records.js';

/**
 * Fixed: every instance must agree on it, and changing it while commands are
 * queued would split an organization's commands over two streams.
 */
export const SHARDS = 16;
export const GROUP = 'actors';

export type Op = 'reserve' | 'allot' | 'settle' | 'release' | 'progress' | 'retired' | 'spent' | 'folded' | 'credit' | 'account' | 'refresh' | 'sync';

/** One command as it sits in a shard stream (field `m`). */
export interface Envelope {
  o: Op;
  /** Correlation id, unique per reply channel. */
  i: number;
  /** Reply channel; null for commands nobody waits on (release). */
  r: string | null;
  /** Reserve only: ms since epoch after which the caller has given up (the actor skips it). */
  x?: number;
  p: unknown;
}

/**
 * One message on a reply channel (an owner sends a worker the messages of one
 * batch as an array of these): the answer to command `i`, or (`i` 0) a recall
 * of the worker's allotment `recall` (Recalls, allotments.ts).
 */
export interface ReplyMessage {
  i: number;
  ok?: unknown;
  e?: string;
  recall?: string;
  /** The recalled allotment's organization (so a worker that does not know the allotment can still retire it). */
  org?: string;
}

/** FNV-1a: cheap, stable across processes and versions, spreads UUIDs evenly. */
export function shardOf(orgId: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < orgId.length; i++) {
    h ^= orgId.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % SHARDS;
}

/** `tollgate:<database name>:`: instances share a ledger exactly when they share a database. */
export function redisPrefix(databaseUrl: string): string {
  let name = 'postgres';
  try {
    name = decodeURIComponent(new URL(databaseUrl).pathname.slice(1)) || name;
  } catch {
    // The schema has already checked the URL's form; keep the default name.
  }
  // A brace in the name would start a hash tag of its own on a Cluster, and split a shard's keys over slots.
  return `tollgate:${name.replace(/[{}]/g, '_')}:`;
}

export class RedisKeys {
  readonly beats: string;
  readonly instances: string;
  /** Shard keys with hash tags, replies on a channel per shard: the keys of a Redis Cluster. */
  readonly cluster: boolean;

  /** `redisUrl`: the topology the names are for (redis-cluster://: hash tags; anything else, one server's names). */
  constructor(
    readonly prefix: string,
    redisUrl = '',
  ) {
    this.beats = prefix + 'beats';
    this.instances = prefix + 'instances';
    this.cluster = redisUrl.startsWith('redis-cluster://');
  }

  /** `{s<n>}` on a Cluster: the hash tag that puts all of shard n's keys (and its answers) in one slot. */
  private tag(shard: number): string {
    return this.cluster ? `:{s${shard}}` : `:${shard}`;
  }

  stream(shard: number): string {
    return `${this.prefix}ledger${this.tag(shard)}`;
  }

  lease(shard: number): string {
    return `${this.prefix}own${this.tag(shard)}`;
  }

  /** Who acquired shard n last (ownership.ts). */
  last(shard: number): string {
    return `${this.prefix}last${this.tag(shard)}`;
  }

  holds(shard: number): string {
    return `${this.prefix}holds${this.tag(shard)}`;
  }

  /** The channel a worker's answers for commands of this shard come on: one per worker, or per worker and shard on a Cluster. */
  reply(owner: string, shard: number): string {
    return this.cluster ? `${this.prefix}reply:${owner}${this.tag(shard)}` : `${this.prefix}reply:${owner}`;
  }

  /** Every channel a worker's answers come on. */
  replyChannels(owner: string): string[] {
    if (!this.cluster) return [this.reply(owner, 0)];
    return Array.from({ length: SHARDS }, (_, s) => this.reply(owner, s));
  }
}

/**
 * A hold as its shard's mirror keeps it (field: request id, or an allotment's
 * id), with its stream's last progress (the next owner settles on it) and
 * what kind of hold it is: 'a' a worker's allotment, 'c' a call's hold carved
 * from one. An allotment is mirrored with its amount at its last grant, not
 * after each call it pays for: a next owner adopts it held for at least what
 * it holds (docs/billing.md, "Allotments").
 */
export function encodeHold(h: HoldRecord): string {
  const kind = h.allotment === true ? 'a' : h.carved === true ? 'c' : null;
  const head = [h.orgId, h.funding, h.amount, h.owner, h.createdAt];
  if (kind !== null) return JSON.stringify([...head, h.progress ?? null, kind]);
  return JSON.stringify(h.progress === undefined ? head : [...head, h.progress]);
}

export function decodeHold(requestId: string, text: string): HoldRecord | null {
  try {
    const [orgId, funding, amount, owner, createdAt, progress, kind] = JSON.parse(text) as [string, HoldRecord['funding'], number, string, number, (UsageRow | null)?, string?];
    if (typeof orgId !== 'string' || typeof amount !== 'number' || typeof owner !== 'string') return null;
    const hold: HoldRecord = kind === 'a' ? { orgId, requestId, funding, amount, owner, createdAt, allotment: true } : kind === 'c' ? { orgId, requestId, funding, amount, owner, createdAt, carved: true } : { orgId, requestId, funding, amount, owner, createdAt };
    if (progress?.requestId === requestId && progress.orgId === orgId && Number.isSafeInteger(progress.chargedMicros)) {
      hold.progress = { ...progress, chargedMicros: Math.min(Math.max(0, progress.chargedMicros), amount) };
    }
    return hold;
  } catch {
    return null;
  }
}

/**
 * The Redis Cluster slot of a key (CRC16/XMODEM of its hash tag, or of the
 * whole key, mod 16384): which primary serves a shard (ownership.ts, tests).
 */
export function hashSlot(key: string): number {
  const open = key.indexOf('{');
  if (open >= 0) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) key = key.slice(open + 1, close);
  }
  let crc = 0;
  for (const byte of Buffer.from(key)) {
    crc ^= byte << 8;
    for (let b = 0; b < 8; b++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16384;
}

/** Organization ids by the shard whose stream their commands go to. */
export function orgsByShard(orgIds: readonly string[]): Map<number, string[]> {
  const out = new Map<number, string[]>();
  for (const id of orgIds) {
    const shard = shardOf(id);
    const ids = out.get(shard);
    if (ids === undefined) out.set(shard, [id]);
    else ids.push(id);
  }
  return out;
}
