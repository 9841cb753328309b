// Shard ownership on a real Redis, under a prefix of this test's own: the
// tick script's fair share, renewal, loss, release, and the `previous` it
// reports (whether an owner's memory of a shard is still the truth). Also
// the small pure pieces: shard hashing, the key prefix, the hold mirror's
// encoding, and the configuration rule that REDIS_URL needs DATABASE_URL.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { ConfigError, loadConfig } from '../../../src/config/load.js';
import { decodeHold, encodeHold, RedisKeys, redisPrefix, shardOf, SHARDS } from '../../../src/ledger/redis/keys.js';
import { LEASE_MS, releaseLease, tick } from '../../../src/ledger/redis/ownership.js';
import type { HoldRecord } from '../../../src/ledger/records.js';
import { usage } from '../helpers.js';
import { redisFor, sharedRedis, sleep } from '../../e2e/scale-out-helpers.js';

t.test('organizations spread over the shards, always to the same one', async (t) => {
  const counts = new Array<number>(SHARDS).fill(0);
  for (let i = 0; i < 1600; i++) counts[shardOf(`${randomBytes(4).toString('hex')}-0000-4000-8000-${randomBytes(6).toString('hex')}`)]++;
  t.ok(Math.min(...counts) > 50 && Math.max(...counts) < 160, `1600 organizations over ${SHARDS} shards: ${counts.join(' ')}`);
  t.equal(shardOf('11111111-1111-4111-8111-111111111111'), 3, 'stable: the same shard in every process and version');
});

t.test('the key prefix is the database name: a shared Redis keeps deployments apart', async (t) => {
  t.equal(redisPrefix('postgres://u:p@db.example:5432/billing'), 'tollgate:billing:');
  t.equal(redisPrefix('postgres://u@10.0.0.5/billing?sslmode=require'), 'tollgate:billing:', 'the host does not matter');
  t.equal(redisPrefix('postgres://u@h'), 'tollgate:postgres:');
});

t.test('a hold survives the mirror round trip; garbage does not', async (t) => {
  const hold = { orgId: 'o', requestId: 'r', funding: 'package' as const, amount: 1234, owner: 'inst/42', createdAt: 1_700_000_000_000 };
  t.same(decodeHold('r', encodeHold(hold)), hold);
  const allotment: HoldRecord = { ...hold, allotment: true };
  t.same(decodeHold('r', encodeHold(allotment)), allotment, 'an allotment stays one');
  const carved: HoldRecord = { ...hold, carved: true, progress: usage('r', 10, hold.amount, 'package', 'o') };
  t.same(decodeHold('r', encodeHold(carved)), carved, 'a call carved from one, with its progress');
  t.equal(decodeHold('r', 'not json'), null);
  t.equal(decodeHold('r', '[1,2]'), null);
});

t.test('REDIS_URL without DATABASE_URL is refused at load, in one line', async (t) => {
  t.throws(() => loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379' }), new ConfigError('config: redis_url needs database_url: every instance sharing a Redis ledger must use the same PostgreSQL (from REDIS_URL)'));
  t.equal(loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379', DATABASE_URL: 'postgres://u@h/db' }).redis_url, 'redis://127.0.0.1:6379');
});

t.test('leases: fair share, renewal, loss, release, and who owned a shard before', async (t) => {
  const url = await sharedRedis(t);
  if (url === null) return;
  const redis = redisFor(t, url);
  const keys = new RedisKeys(`tollgate-test-${randomBytes(6).toString('hex')}:`);
  t.teardown(async () => {
    const all = await redis.keys(keys.prefix + '*');
    if (all.length > 0) await redis.del(...all);
  });
  const mine = (r: Awaited<ReturnType<typeof tick>>, kinds: string[]): number[] => r.shards.flatMap((s, i) => (kinds.includes(s.kind) ? [i] : []));

  const a1 = await tick(redis, keys, 'A', [], true);
  t.equal(a1.live, 1, 'one live instance');
  t.equal(mine(a1, ['acquired']).length, SHARDS, 'alone, an instance takes every shard');
  t.ok(a1.shards.every((s) => s.kind !== 'acquired' || s.previous === ''), 'nobody owned them before');

  const b1 = await tick(redis, keys, 'B', [], true);
  t.same([b1.live, b1.fair, mine(b1, ['acquired']).length], [2, SHARDS / 2, 0], 'a second instance: fair share halves, nothing is free');
  const heldByA = mine(a1, ['acquired']);
  const a2 = await tick(redis, keys, 'A', heldByA, true);
  t.equal(mine(a2, ['kept']).length, SHARDS, 'renewed, all of them');
  // A hands off half (as the host does when over its fair share); B takes them.
  const given = heldByA.slice(0, SHARDS / 2);
  for (const s of given) await releaseLease(redis, keys, 'A', s);
  const b2 = await tick(redis, keys, 'B', [], true);
  t.same(mine(b2, ['acquired']), given, 'B acquires exactly what A gave up');
  t.ok(given.every((s) => b2.shards[s].kind === 'acquired' && (b2.shards[s] as { previous: string }).previous === 'A'), 'and learns A owned them before');
  t.same(mine(await tick(redis, keys, 'A', heldByA, true), ['lost']), given, 'A, still listing them, is told they are lost');

  // A lease that runs out (its owner stalled) is re-taken by the same owner with its memory intact: nobody came between.
  const own = `${keys.prefix}own:${given[0]}`;
  await redis.del(own);
  const b3 = await tick(redis, keys, 'B', given, false);
  t.same(b3.shards[given[0]], { kind: 'acquired', previous: 'B' }, 're-acquired; previous is itself, so its memory stands');
  // Redis restarted empty: nothing on record, memory stands too.
  await redis.del(own, `${keys.prefix}last:${given[0]}`);
  const b4 = await tick(redis, keys, 'B', given, false);
  t.same(b4.shards[given[0]], { kind: 'acquired', previous: '' }, 'nobody on record');
  t.ok(Number(await redis.pttl(own)) > LEASE_MS - 500, 'the lease is set with its expiry');

  // An instance that stops ticking leaves the register one lease later.
  await sleep(LEASE_MS + 100);
  const b5 = await tick(redis, keys, 'B', given, true);
  t.same([b5.live, b5.fair], [1, SHARDS], 'A is gone from the register: B may take everything');
  t.equal(mine(b5, ['acquired']).length + mine(b5, ['kept']).length, SHARDS, 'and does');
});
