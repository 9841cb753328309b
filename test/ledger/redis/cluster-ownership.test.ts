// Shard leases on a real Redis Cluster (three primaries with a replica each,
// of this test's own): the lease round split per slot (ownership.ts
// clusterTick) keeps what the single script promises — fair share, renewal,
// who owned a shard before — and a dead primary stalls only its own shards:
// the others are renewed, and another instance leaves the dead primary's
// shards to their owner, who re-takes them with its memory once the replica
// is promoted.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { clusterTopology } from '../../helpers/redis-topology.js';
import { connectRedis, type RedisLike } from '../../../src/ledger/redis/connection.js';
import { hashSlot, RedisKeys, SHARDS } from '../../../src/ledger/redis/keys.js';
import { LEASE_MS, tick, type TickResult } from '../../../src/ledger/redis/ownership.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const kinds = (r: TickResult): string => r.shards.map((s) => s.kind[0]).join('');

const topo = await clusterTopology(t);
if (topo !== null) {
  t.test('leases per slot: fair share, renewal, and a dead primary stalls only its shards', async (t) => {
    const prefix = `tollgate-test-${randomBytes(6).toString('hex')}:`;
    // Each instance its own connection and keys object, as in two gateways.
    const instance = (): { redis: RedisLike; keys: RedisKeys } => {
      const redis = connectRedis(topo.url, { maxRetriesPerRequest: 1, commandTimeout: 2000, enableAutoPipelining: true, retryStrategy: (n) => Math.min(1000, 50 * n) });
      redis.on('error', () => {});
      t.teardown(() => redis.disconnect());
      return { redis, keys: new RedisKeys(prefix, topo.url) };
    };
    const a = instance();
    const b = instance();
    const all = Array.from({ length: SHARDS }, (_, i) => i);

    const first = await tick(a.redis, a.keys, 'A', [], true);
    t.same([first.live, first.fair, kinds(first)], [1, 16, 'a'.repeat(16)], 'alone: every shard acquired, in one round');
    t.ok(first.shards.every((s) => s.kind === 'acquired' && s.previous === ''), 'nobody owned them before');
    const seen = await tick(b.redis, b.keys, 'B', [], true);
    t.same([seen.live, seen.fair, kinds(seen)], [2, 8, 'o'.repeat(16)], 'a second instance: fair share 8, every shard held by the other');
    const renewedAt = Date.now();
    const kept = await tick(a.redis, a.keys, 'A', all, true);
    t.equal(kinds(kept), 'k'.repeat(16), 'renewed, on every primary (each primary confirmed by its replica)');

    // kill -9 of the primary serving the most shards.
    const primaries = await topo.primaries();
    const primaryOf = (s: number): number => [...primaries.entries()].find(([, r]) => r.some(([x, y]) => hashSlot(a.keys.lease(s)) >= x && hashSlot(a.keys.lease(s)) <= y))![0];
    const per = new Map<number, number[]>();
    for (const s of all) per.set(primaryOf(s), [...(per.get(primaryOf(s)) ?? []), s]);
    const [victim, lost] = [...per.entries()].sort((x, y) => y[1].length - x[1].length)[0];
    const killedAt = Date.now();
    await topo.kill(victim);
    const during = await tick(a.redis, a.keys, 'A', all, true);
    t.same(
      all.filter((s) => during.shards[s].kind !== 'kept'),
      lost,
      `primary :${victim} dead: its shards (${lost.join(',')}) not renewed, the others renewed (round took ${Date.now() - killedAt} ms)`,
    );
    // Both instances tick every 500 ms, as their hosts do, until the replica is promoted; the owner renews only its
    // other shards here, so that the dead primary's leases have surely run out when the other instance next looks.
    const others = all.filter((s) => !lost.includes(s));
    let promotedAt = 0;
    const promotion = topo.waitForPromotion(victim).then(() => (promotedAt = Date.now()));
    let bTook: number[] = [];
    while (promotedAt === 0) {
      const started = Date.now();
      const rb = await tick(b.redis, b.keys, 'B', [], true);
      const ra = await tick(a.redis, a.keys, 'A', others, true);
      bTook = [...bTook, ...lost.filter((s) => rb.shards[s].kind === 'acquired')];
      t.ok(others.every((s) => ra.shards[s].kind === 'kept'), "the other primaries' shards renewed in every round");
      await sleep(Math.max(0, 500 - (Date.now() - started)));
    }
    await promotion;
    await sleep(Math.max(0, renewedAt + LEASE_MS + 100 - Date.now()));
    const rb = await tick(b.redis, b.keys, 'B', [], true);
    bTook = [...bTook, ...lost.filter((s) => rb.shards[s].kind === 'acquired')];
    t.same(bTook, [], 'the replica promoted and the leases run out, the other instance still leaves them to their owner (a lease after its own rounds failed)');
    const ra = await tick(a.redis, a.keys, 'A', all, true);
    t.ok(
      lost.every((s) => ra.shards[s].kind === 'acquired' && (ra.shards[s] as { previous: string }).previous === 'A'),
      'the owner re-takes every one, and knows nobody else owned them meanwhile (its memory is the truth)',
    );
  });
}
