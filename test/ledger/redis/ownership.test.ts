// Shard ownership on a real Redis, under a prefix of this test's own: the
// tick script's fair share, renewal, loss, release, and the `previous` it
// reports (whether an owner's memory of a shard is still the truth). Also
// the small pure pieces: shard hashing, the key prefix, the hold mirror's
// encoding, and the configuration rule that REDIS_URL needs DATABASE_URL.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { ConfigError, loadConfig } from '../../../src/config/load.js';
import { decodeHold, encodeHold, hashSlot, RedisKeys, redisPrefix, shardOf, SHARDS } from '../../../src/ledger/redis/keys.js';
import { parseClusterUrl } from '../../../src/config/cluster-url.js';
import { clusterOptions, sentinelOptions } from '../../../src/ledger/redis/connection.js';
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

t.test('a Sentinel REDIS_URL: its sentinels, master, passwords; a malformed one refused at load, in one line', async (t) => {
  const db = { DATABASE_URL: 'postgres://u@h/db' };
  const url = 'redis-sentinel://:s%40cret@10.0.0.1:26379,sentinel-2:26380,s3/ledger?sentinel_password=other';
  t.equal(loadConfig({ ...db, REDIS_URL: url }).redis_url, url);
  const { sentinels, name, username, password, sentinelPassword } = sentinelOptions(url);
  t.same({ sentinels, name, username, password, sentinelPassword }, {
    sentinels: [
      { host: '10.0.0.1', port: 26379 },
      { host: 'sentinel-2', port: 26380 },
      { host: 's3', port: 26379 },
    ],
    name: 'ledger',
    username: undefined,
    password: 's@cret',
    sentinelPassword: 'other',
  }, 'the URL as ioredis Sentinel options');
  t.equal(sentinelOptions('redis-sentinel://:pw@h:1/m').sentinelPassword, 'pw', "the sentinels' password is the master's by default");
  t.equal(sentinelOptions('redis-sentinel://h:1/m').password, undefined, 'no password');
  const refused = (u: string, why: string): void => {
    t.throws(() => loadConfig({ ...db, REDIS_URL: u }), new ConfigError(`config: redis_url ${why} (from REDIS_URL)`), u);
  };
  refused('redis-sentinel://h1:26379', 'a Sentinel URL is redis-sentinel://[:password@]host:port[,host:port…]/<master name>');
  refused('redis-sentinel://h1:26379,:5/m', "bad sentinel address ':5' (host:port)");
  refused('redis-sentinel://h1:99999/m', "bad sentinel address 'h1:99999' (host:port)");
  refused('redis-sentinel://h1:1/m?db=2', "unknown parameter 'db' (only sentinel_password)");
  t.throws(() => loadConfig({ ...db, REDIS_URL: 'sentinel://h/m' }), { message: 'config: redis_url must match pattern "^(rediss?|redis-sentinel|redis-cluster)://" (from REDIS_URL)' }, 'another scheme: the schema refuses it');
});

t.test('a Cluster REDIS_URL: its seed nodes and password; a malformed one refused at load, in one line', async (t) => {
  const db = { DATABASE_URL: 'postgres://u@h/db' };
  const url = 'redis-cluster://:s%40cret@10.0.0.1:7000,node-2:7001,n3';
  t.equal(loadConfig({ ...db, REDIS_URL: url }).redis_url, url);
  t.same(parseClusterUrl(url), { nodes: [{ host: '10.0.0.1', port: 7000 }, { host: 'node-2', port: 7001 }, { host: 'n3', port: 6379 }], username: undefined, password: 's@cret' });
  const { redisOptions, scaleReads, shardedSubscribers } = clusterOptions(url, { connectionName: 'x' }, true);
  t.same({ ...redisOptions, scaleReads, shardedSubscribers }, { connectionName: 'x', username: undefined, password: 's@cret', scaleReads: 'master', shardedSubscribers: true }, 'as ioredis Cluster options: the password on every node, commands to primaries');
  const refused = (u: string, why: string): void => {
    t.throws(() => loadConfig({ ...db, REDIS_URL: u }), new ConfigError(`config: redis_url ${why} (from REDIS_URL)`), u);
  };
  refused('redis-cluster://h1:7000/0', 'a Cluster URL is redis-cluster://[:password@]host:port[,host:port…]');
  refused('redis-cluster://h1:7000,:5', "bad cluster node address ':5' (host:port)");
  refused('redis-cluster://h1:70000', "bad cluster node address 'h1:70000' (host:port)");
});

t.test("key names: unchanged on one server or Sentinel; on a Cluster a shard's keys and answers in one slot, the shards over the slot ranges", async (t) => {
  const single = new RedisKeys('tollgate:db:', 'redis-sentinel://h:1/m');
  t.same([single.stream(3), single.lease(3), single.last(3), single.holds(3), single.reply('i/1', 3), single.replyChannels('i/1')], ['tollgate:db:ledger:3', 'tollgate:db:own:3', 'tollgate:db:last:3', 'tollgate:db:holds:3', 'tollgate:db:reply:i/1', ['tollgate:db:reply:i/1']]);
  const cluster = new RedisKeys('tollgate:db:', 'redis-cluster://h:1');
  t.same([cluster.stream(3), cluster.lease(3), cluster.holds(3), cluster.reply('i/1', 3)], ['tollgate:db:ledger:{s3}', 'tollgate:db:own:{s3}', 'tollgate:db:holds:{s3}', 'tollgate:db:reply:i/1:{s3}']);
  t.equal(cluster.replyChannels('i/1').length, SHARDS, 'a channel per shard');
  // redis-cli --cluster create gives three primaries 0-5460, 5461-10922, 10923-16383.
  const per = [0, 0, 0];
  for (let s = 0; s < SHARDS; s++) per[hashSlot(cluster.stream(s)) <= 5460 ? 0 : hashSlot(cluster.stream(s)) <= 10922 ? 1 : 2]++;
  t.same(per, [6, 4, 6], 'the 16 shards over three primaries');
  t.equal(hashSlot('foo'), 12182, 'CRC16 as Redis computes it (CLUSTER KEYSLOT foo)');
  t.equal(redisPrefix('postgres://u@h/a{b}'), 'tollgate:a_b_:', 'a brace in the database name cannot start a hash tag');
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
