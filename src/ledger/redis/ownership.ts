// Shard ownership: a lease per shard (SET NX PX), renewed by one Lua script
// per tick for all the shards an instance holds, which in the same call
// registers the instance as live and acquires free shards up to its fair share
// (ceil(shards / live instances)). One round trip per tick whatever the number
// of shards, and atomic, so two instances never both believe they acquired one.
// It also says which of the other shards someone holds, so an instance knows
// when every shard has an owner (its readiness: src/ledger/redis/host.ts).
//
// An owner stops applying commands at its lease's local deadline (the time
// the last renewal was sent + the lease − a margin), which the lease in Redis
// outlives: no other instance can acquire the shard before the owner has
// stopped. `last:<n>` remembers who acquired a shard last, so an owner that
// re-acquires its shard after losing the lease (Redis restarted, a stall)
// knows whether anyone else owned it meanwhile, i.e. whether its memory of the
// shard's holds is still the truth.
//
// On a Redis Cluster one script cannot touch every shard's lease (they are in
// different slots, on different primaries), so a tick there is a script per
// slot (clusterTick): the register first, then each shard's lease, each
// atomic on its own (a lease is still taken with the same test-and-set), then
// free shards taken up to the fair share. Each primary's leases count once its
// replica has them, primary by primary: a dead primary stalls its own shards,
// not the others'.
import type { Cluster, Redis } from 'ioredis';
import type { RedisLike } from './connection.js';
import { isCluster, Script } from './connection.js';
import { hashSlot, SHARDS, type RedisKeys } from './keys.js';

/** How long an owner's lease lasts without renewal: a dead instance's shards move after this. */
export const LEASE_MS = 2000;
/** Renewal period: three renewals can fail before a lease runs out. */
export const TICK_MS = 500;
/** An owner stops this long before its lease could run out in Redis (clock rates, network). */
const MARGIN_MS = 300;

const TICK = new Script(`
local prefix, me = ARGV[1], ARGV[2]
local lease, shards, acquire, offset = tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5] == '1', tonumber(ARGV[6])
local held = {}
for s in string.gmatch(ARGV[7], '%d+') do held[tonumber(s)] = true end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local reg = prefix .. 'instances'
redis.call('ZADD', reg, now, me)
redis.call('ZREMRANGEBYSCORE', reg, '-inf', now - lease)
local live = redis.call('ZCARD', reg)
local fair = math.ceil(shards / live)
local out, owned = {}, 0
local function take(i)
  local own = prefix .. 'own:' .. i
  redis.call('SET', own, me, 'PX', lease)
  local prev = redis.call('GET', prefix .. 'last:' .. i)
  redis.call('SET', prefix .. 'last:' .. i, me)
  owned = owned + 1
  return 'a' .. (prev or '')
end
for i = 0, shards - 1 do
  out[i + 1] = '-'
  if held[i] then
    local own = prefix .. 'own:' .. i
    local v = redis.call('GET', own)
    if v == me then
      redis.call('PEXPIRE', own, lease)
      out[i + 1] = 'k'
      owned = owned + 1
    elseif not v then
      out[i + 1] = take(i)
    else
      out[i + 1] = 'l'
    end
  end
end
if acquire then
  for j = 0, shards - 1 do
    local i = (j + offset) % shards
    if owned >= fair then break end
    if not held[i] and redis.call('EXISTS', prefix .. 'own:' .. i) == 0 then out[i + 1] = take(i) end
  end
end
for i = 0, shards - 1 do
  if out[i + 1] == '-' and redis.call('EXISTS', prefix .. 'own:' .. i) == 1 then out[i + 1] = 'o' end
end
return {live, fair, out}
`);

const RELEASE = new Script(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`);

/** What one tick found for a shard. */
export type ShardStatus =
  /** Renewed: still ours. */
  | { kind: 'kept' }
  /** Acquired now; `previous` acquired it last before us ('' when nobody is on record, e.g. Redis restarted empty). */
  | { kind: 'acquired'; previous: string }
  /** Another instance holds it: whatever we remember of it is stale. */
  | { kind: 'lost' }
  /** Another instance holds it, and we did not: its commands are served there. */
  | { kind: 'other' }
  /** Nobody holds it (we are at our fair share, or may not acquire now): its commands wait in the stream. */
  | { kind: 'none' };

export interface TickResult {
  live: number;
  fair: number;
  shards: ShardStatus[];
}

/** Spreads instances' first choices over the shards, so two starting together rarely contend. */
export function preferredOffset(instanceId: string): number {
  let h = 0;
  for (let i = 0; i < instanceId.length; i++) h = (h * 31 + instanceId.charCodeAt(i)) >>> 0;
  return h % SHARDS;
}

/** How long a tick waits for a replica to confirm its leases (WAIT): about one round trip when the replica is healthy. */
const REPLICA_WAIT_MS = 100;

/** A primary with replicas did not get this tick's leases onto one in time: the tick counts as failed. */
export class NotReplicated extends Error {}

export async function tick(redis: RedisLike, keys: RedisKeys, me: string, held: Iterable<number>, acquire: boolean): Promise<TickResult> {
  if (isCluster(redis)) return clusterTick(redis, keys, me, new Set(held), acquire);
  const raw = (await TICK.run(redis, [], [keys.prefix, me, LEASE_MS, SHARDS, acquire ? '1' : '0', preferredOffset(me), [...held].join(',')])) as [
    number,
    number,
    string[],
  ];
  await replicated(redis);
  return { live: Number(raw[0]), fair: Number(raw[1]), shards: raw[2].map(status) };
}

function status(s: string): ShardStatus {
  if (s === 'k') return { kind: 'kept' };
  if (s === 'l') return { kind: 'lost' };
  if (s === 'o') return { kind: 'other' };
  if (s.startsWith('a')) return { kind: 'acquired', previous: s.slice(1) };
  return { kind: 'none' };
}

/** Registers the instance as live (the register's own slot); answers how many are. */
const REGISTER = new Script(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
return redis.call('ZCARD', KEYS[1])
`);

/**
 * One shard's lease (KEYS: own, last), as the single-server TICK treats each
 * shard: mode 'h' (held: renew, or re-take if it lapsed), 't' (take if free),
 * 'p' (only say whether someone holds it).
 */
const SHARD_LEASE = new Script(`
local me, lease, mode = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local function take()
  redis.call('SET', KEYS[1], me, 'PX', lease)
  local prev = redis.call('GET', KEYS[2])
  redis.call('SET', KEYS[2], me)
  return 'a' .. (prev or '')
end
local v = redis.call('GET', KEYS[1])
if mode == 'h' then
  if v == me then
    redis.call('PEXPIRE', KEYS[1], lease)
    return 'k'
  end
  if not v then return take() end
  return 'l'
end
if v then return 'o' end
if mode == 't' then return take() end
return '-'
`);

/**
 * A tick on a Redis Cluster. A shard whose script or whose primary's WAIT
 * failed (its primary dead, not yet replaced) is reported 'none': its owner
 * lets its lease run out rather than count a renewal a failover may lose.
 */
async function clusterTick(redis: Cluster, keys: RedisKeys, me: string, held: Set<number>, acquire: boolean): Promise<TickResult> {
  const state = stateOf(keys);
  // The register is one key, on one primary: while that primary is being replaced, the last count stands (the
  // other primaries' shards are renewed meanwhile); with no count yet, the round fails.
  const live = await REGISTER.run(redis, [keys.instances], [me, LEASE_MS]).then(
    (n) => (state.live = Number(n)),
    (err: Error) => {
      if (state.live === 0) throw err;
      return state.live;
    },
  );
  const fair = Math.ceil(SHARDS / live);
  const shardIds = Array.from({ length: SHARDS }, (_, i) => i);
  // Which primary serves each shard as this round starts: a shard whose slot moved meanwhile does not count.
  const primaryBefore = shardIds.map((i) => primaryOf(redis, keys, i));
  const run = (i: number, mode: string): Promise<string> => (SHARD_LEASE.run(redis, [keys.lease(i), keys.last(i)], [me, LEASE_MS, mode]) as Promise<string>).catch(() => 'x');
  const out = await Promise.all(shardIds.map((i) => run(i, held.has(i) ? 'h' : 'p')));
  const ours = (s: string): boolean => s === 'k' || s.startsWith('a');
  let owned = out.filter(ours).length;
  const failed = state.failedAt;
  const now = Date.now();
  for (const i of shardIds) if (out[i] === 'x') failed[i] = now;
  if (acquire) {
    const offset = preferredOffset(me);
    // As after an outage of a single Redis (host.ts, lastFailure), shard by shard: one whose primary did not answer
    // lately is left a lease to its previous owner, who re-takes it with its memory of the shard.
    const free = shardIds.map((j) => (j + offset) % SHARDS).filter((i) => out[i] === '-' && now - failed[i] > LEASE_MS);
    while (owned < fair && free.length > 0) {
      const batch = free.splice(0, fair - owned);
      const got = await Promise.all(batch.map((i) => run(i, 't')));
      batch.forEach((i, j) => {
        out[i] = got[j];
        if (ours(got[j])) owned++;
      });
    }
  }
  // Each primary that holds a lease of ours now: its replica must have them (WAIT on that primary's connection).
  const nodes = new Map(redis.nodes('master').map((n) => [`${n.options.host}:${n.options.port}`, n]));
  const confirmed = new Map<string, Promise<boolean>>();
  for (const i of shardIds) {
    const key = primaryBefore[i];
    if (!ours(out[i]) || key === undefined || confirmed.has(key)) continue;
    const node = nodes.get(key);
    confirmed.set(key, node === undefined ? Promise.resolve(false) : replicated(node).then(() => true, () => false));
  }
  for (const i of shardIds) {
    if (!ours(out[i])) continue;
    const key = primaryBefore[i];
    if (key === undefined || !(await confirmed.get(key)) || primaryOf(redis, keys, i) !== key) {
      out[i] = 'x';
      failed[i] = Date.now();
    }
  }
  return { live, fair, shards: out.map(status) };
}

/**
 * What a Cluster's lease rounds remember, per ledger (its keys): when each
 * shard's round last failed (ms since epoch, 0 never), and the last count of
 * live instances.
 */
const states = new WeakMap<RedisKeys, { failedAt: number[]; live: number }>();

function stateOf(keys: RedisKeys): { failedAt: number[]; live: number } {
  let state = states.get(keys);
  if (state === undefined) states.set(keys, (state = { failedAt: new Array<number>(SHARDS).fill(0), live: 0 }));
  return state;
}

/** The primary ('host:port') that serves shard i's slot, as the client's slot map says now. */
function primaryOf(redis: Cluster, keys: RedisKeys, i: number): string | undefined {
  return redis.slots[hashSlot(keys.lease(i))]?.[0];
}

/**
 * A lease counts only once a replica has it (docs/billing.md, "Redis
 * Sentinel"): Redis replicates asynchronously, so a renewal the primary
 * acknowledged and lost in a failover would leave the promoted replica with
 * an older expiry, and another instance could acquire the shard while this
 * one still applies its commands. WAIT covers the writes this connection made
 * so far (the tick's script among them), so ticks have a connection of their
 * own (host.ts) and WAIT delays no reply. A primary without replicas (a single
 * RedisLike, or a promoted replica alone) has nothing to wait for: ROLE says so.
 */
async function replicated(redis: Redis): Promise<void> {
  // Asked first: WAIT on a primary without replicas would block for its whole timeout.
  const role = (await redis.role()) as unknown[];
  const replicas = role[0] === 'master' && Array.isArray(role[2]) ? role[2].length : 0;
  if (replicas === 0) return;
  if ((await redis.wait(1, REPLICA_WAIT_MS)) < 1) throw new NotReplicated(`ledger: shard leases not confirmed by a replica within ${REPLICA_WAIT_MS} ms`);
}

/** Gives a shard up (after its commands are applied and its writes are done); only if it is still ours. */
export async function releaseLease(redis: RedisLike, keys: RedisKeys, me: string, shard: number): Promise<void> {
  await RELEASE.run(redis, [keys.lease(shard)], [me]);
}

/** Until when an owner may apply commands, given when the renewal that succeeded was sent. */
export function validUntil(sentAt: number): number {
  return sentAt + LEASE_MS - MARGIN_MS;
}
