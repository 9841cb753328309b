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
import type { Redis } from 'ioredis';
import { Script } from './connection.js';
import { SHARDS, type RedisKeys } from './keys.js';

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

export async function tick(redis: Redis, keys: RedisKeys, me: string, held: Iterable<number>, acquire: boolean): Promise<TickResult> {
  const raw = (await TICK.run(redis, [], [keys.prefix, me, LEASE_MS, SHARDS, acquire ? '1' : '0', preferredOffset(me), [...held].join(',')])) as [
    number,
    number,
    string[],
  ];
  const shards = raw[2].map((s): ShardStatus => {
    if (s === 'k') return { kind: 'kept' };
    if (s === 'l') return { kind: 'lost' };
    if (s === 'o') return { kind: 'other' };
    if (s.startsWith('a')) return { kind: 'acquired', previous: s.slice(1) };
    return { kind: 'none' };
  });
  return { live: Number(raw[0]), fair: Number(raw[1]), shards };
}

/** Gives a shard up (after its commands are applied and its writes are done); only if it is still ours. */
export async function releaseLease(redis: Redis, keys: RedisKeys, me: string, shard: number): Promise<void> {
  await RELEASE.run(redis, [keys.lease(shard)], [me]);
}

/** Until when an owner may apply commands, given when the renewal that succeeded was sent. */
export function validUntil(sentAt: number): number {
  return sentAt + LEASE_MS - MARGIN_MS;
}
