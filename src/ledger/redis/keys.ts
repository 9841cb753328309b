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
import type { UsageRow } from '../protocol.js';
import type { HoldRecord } from '../records.js';

/**
 * Fixed: every instance must agree on it, and changing it while commands are
 * queued would split an organization's commands over two streams.
 */
export const SHARDS = 16;
export const GROUP = 'actors';

export type Op = 'reserve' | 'settle' | 'release' | 'progress' | 'retired' | 'credit' | 'account' | 'refresh' | 'sync';

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
  return `tollgate:${name}:`;
}

export class RedisKeys {
  readonly beats: string;
  readonly instances: string;

  constructor(readonly prefix: string) {
    this.beats = prefix + 'beats';
    this.instances = prefix + 'instances';
  }

  stream(shard: number): string {
    return `${this.prefix}ledger:${shard}`;
  }

  lease(shard: number): string {
    return `${this.prefix}own:${shard}`;
  }

  holds(shard: number): string {
    return `${this.prefix}holds:${shard}`;
  }

  reply(owner: string): string {
    return `${this.prefix}reply:${owner}`;
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
