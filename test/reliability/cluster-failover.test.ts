// The ledger on a Redis Cluster (issue 36): two instances given a
// redis-cluster:// URL (three primaries with a replica each, of this test's
// own), organizations whose shards are on every primary (checked), a spend
// storm on both instances, and kill -9 of one primary in the middle of it —
// the one serving an organization funded for exactly K of N concurrent calls,
// while its K run. After the cluster promotes that primary's replica, calls go
// on; exactly K answered; the books are exact to the micro, every answered
// call has its usage row, no hold is left after the leases. The time calls
// were refused is measured and printed, for the organizations on the killed
// primary and for the others (the figures docs/billing.md states).
import t from 'tap';
import { clusterTopology } from '../helpers/redis-topology.js';
import { provision } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';
import { formatMoney } from '../../src/money/money.js';
import { hashSlot, RedisKeys, redisPrefix, shardOf, SHARDS } from '../../src/ledger/redis/keys.js';
import { chat, countingSimulator, eventually, fundedForK, redisFor, startInstances, storeMoney, waitForSpread } from '../e2e/scale-out-helpers.js';
import { assertStormBooks } from './lib/rig.js';
import { storm } from './lib/load.js';
import { Redis } from 'ioredis';

const LEASE_MS = 2000;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The longest span between two answered calls ending after `from` (ms): how long callers got nothing. */
function longestGap(ends: number[], from: number): number {
  const sorted = [...ends].sort((a, b) => a - b);
  let gap = 0;
  for (let i = 1; i < sorted.length; i++) if (sorted[i - 1] >= from - 1000) gap = Math.max(gap, sorted[i] - sorted[i - 1]);
  return Math.round(gap);
}

const db = await testDatabase(t);
const topo = db === null ? null : await clusterTopology(t);
if (db !== null && topo !== null) {
  t.test('kill -9 of a Redis Cluster primary during a spend storm on two instances', async (t) => {
    const keys = new RedisKeys(redisPrefix(db), topo.url);
    const primaries = await topo.primaries();
    const primaryOfShard = (shard: number): number => {
      const slot = hashSlot(keys.stream(shard));
      return [...primaries.entries()].find(([, ranges]) => ranges.some(([a, b]) => slot >= a && slot <= b))![0];
    };
    const shardsPer = new Map<number, number[]>();
    for (let s = 0; s < SHARDS; s++) shardsPer.set(primaryOfShard(s), [...(shardsPer.get(primaryOfShard(s)) ?? []), s]);
    t.equal(shardsPer.size, 3, `the 16 shards spread over the three primaries: ${[...shardsPer.entries()].map(([p, s]) => `:${p} ${s.length}`).join(', ')}`);
    // A shard's stream, lease, last owner and holds in one slot (what one script or pipeline touches together).
    for (let s = 0; s < SHARDS; s++) t.equal(new Set([keys.stream(s), keys.lease(s), keys.last(s), keys.holds(s), keys.reply('w', s)].map(hashSlot)).size, 1, `shard ${s}: one slot`);

    // The K of N calls (below): slow, so that they are still running at the kill, and counted at the supplier.
    const content = 'slow [sim:words=3] [sim:delay_ms=1500]';
    const { sim, received } = await countingSimulator(t, content);
    const env = { DATABASE_URL: db, REDIS_URL: topo.url, SIMULATOR_URL: sim.url, HOLD_LEASE_MS: String(LEASE_MS), QUOTA_PER_SECOND: '100000', QUOTA_PER_MINUTE: '10000000' };
    const gateways = await startInstances(t, 2, env);
    const redis = redisFor(t, topo.url);
    await waitForSpread(redis, db, gateways);

    // The organization funded for exactly K of N, and the primary its shard is on: the one killed.
    const K = 5;
    const N = 40;
    const { credits } = fundedForK(content, K);
    const exact = await provision(gateways[0].url, { balance: formatMoney(credits) });
    const victim = primaryOfShard(shardOf(exact.orgId));
    // Storm organizations until there is one on every primary (their shards say where: checked, not assumed).
    const orgs: Array<{ key: string; orgId: string; primary: number }> = [];
    for (let i = 0; i < 40 && new Set(orgs.map((o) => o.primary)).size < 3; i++) {
      const o = await provision(gateways[0].url, { balance: '0.50' });
      const primary = primaryOfShard(shardOf(o.orgId));
      if (orgs.filter((x) => x.primary === primary).length < 2) orgs.push({ ...o, primary });
    }
    t.equal(new Set(orgs.map((o) => o.primary)).size, 3, `storm organizations on every primary: ${orgs.map((o) => `:${o.primary}`).join(' ')}`);
    for (const o of [...orgs, exact]) await eventually('the key reaches both instances', async () => (await fetch(`${gateways[1].url}/v1/key`, { headers: { authorization: `Bearer ${o.key}` } })).status === 200);

    const load = storm(gateways.map((g) => g.url), orgs.map((o) => o.key), 6, ['chat', 'chat-stream'], 'storm [sim:words=30] [sim:delay_ms=5]');
    const results = load.results;
    const primaryOf = (r: { keyIndex: number }): number => orgs[r.keyIndex]!.primary;
    // The storm well under way on every primary before the K of N start (a slow machine answers fewer per second).
    await eventually('the storm answered on every primary', async () => results.filter((r) => r.outcome === 'ok').length >= 30 && new Set(results.filter((r) => r.outcome === 'ok').map(primaryOf)).size === 3, 15_000);
    const kOfN = Promise.all(Array.from({ length: N }, (_, i) => chat(gateways[i % 2].url, exact.key, content)));
    // Killed once the K run at the supplier (their callers told they are admitted), not once the organization's money
    // is held, which can be before (countingSimulator says how).
    await eventually('all K calls at the supplier', async () => received() >= K, 5000);
    // Lease rounds wait for the victim's replica (WAIT, per primary) before they count.
    const direct = new Redis({ port: victim, host: '127.0.0.1', maxRetriesPerRequest: 0 });
    const stats = String(await direct.info('commandstats'));
    direct.disconnect();
    t.match(stats, /cmdstat_wait:calls=[1-9]/, 'lease rounds wait for the replica');
    t.match(stats, /cmdstat_spublish:calls=[1-9]/, 'answers by sharded pub/sub (SPUBLISH)');
    const killedAt = Date.now();
    await topo.kill(victim);
    const promotedMs = await topo.waitForPromotion(victim);
    const promotedAt = killedAt + promotedMs;
    t.ok(true, `primary :${victim} killed (shards ${shardsPer.get(victim)!.join(',')}); its replica promoted after ${promotedMs} ms`);
    // The workers' answer channels for the killed primary's shards are subscribed again, on the promoted replica.
    const promoted = [...(await topo.primaries()).keys()].find((p) => !primaries.has(p))!;
    const onPromoted = new Redis({ port: promoted, host: '127.0.0.1', maxRetriesPerRequest: 0 });
    const victimTags = new Set(shardsPer.get(victim)!.map((s) => `{s${s}}`));
    const resubscribed = async (): Promise<number> => ((await onPromoted.call('PUBSUB', 'SHARDCHANNELS', `${keys.prefix}reply:*`)) as string[]).filter((c) => victimTags.has(c.slice(c.lastIndexOf('{')))).length;
    await eventually('answer channels subscribed again on the promoted replica', async () => (await resubscribed()) >= 2 * victimTags.size, 10_000);
    t.ok(true, `${await resubscribed()} answer channels of the killed primary's shards subscribed on :${promoted} (2 workers × ${victimTags.size} shards)`);
    onPromoted.disconnect();
    await eventually(
      'calls answered again after the promotion, on every primary',
      async () => new Set(results.filter((r) => r.at > promotedAt && r.outcome === 'ok').map(primaryOf)).size === 3,
      20_000,
    );
    await sleep(3000);
    await load.stop();
    const statuses = (await kOfN).map((c) => c.status);
    const tally = [...new Set(statuses)].map((s) => `${s} × ${statuses.filter((x) => x === s).length}`).join(', ');
    t.equal(statuses.filter((s) => s === 200).length, K, `exactly ${K} of ${N} admitted, answered through the failover (${tally})`);
    t.equal(received(), K, `the supplier received exactly ${K} of them`);
    t.same(statuses.filter((s) => s !== 200 && s !== 402 && s !== 503), [], 'the rest refused: 402 (no money), 503 (during the failover)');

    t.same(results.filter((r) => r.outcome === 'broken'), [], `${results.length} calls: every refusal in its envelope, every stream ended as the spec says`);
    const ok = results.filter((r) => r.outcome === 'ok');
    const before = ok.filter((r) => r.at < killedAt).length;
    const after = ok.filter((r) => r.at > promotedAt).length;
    t.ok(before > 20 && after > 20, `${before} calls answered before the kill, ${after} after the promotion`);
    for (const gw of [0, 1]) t.ok(ok.some((r) => r.gw === gw && r.at > promotedAt), `instance ${gw} answers calls after the promotion`);
    // What the failover cost callers: on the killed primary's shards, and on the others'.
    const on = (victimSide: boolean): typeof results => results.filter((r) => (primaryOf(r) === victim) === victimSide);
    for (const side of [true, false]) {
      const mine = on(side);
      const gap = longestGap(mine.filter((r) => r.outcome === 'ok').map((r) => r.at + r.ms), killedAt);
      const refused = mine.filter((r) => r.outcome !== 'ok' && r.at >= killedAt - 500);
      t.comment(
        `failover cost (${side ? 'organizations on the killed primary' : 'organizations on the other primaries'}): promotion ${promotedMs} ms after kill -9; longest span without an answered call ${gap} ms; ${refused.length} calls refused (${[...new Set(refused.map((r) => r.status))].join(', ') || 'none'}) of ${mine.length}`,
      );
    }

    const store = await storeMoney(db, exact.orgId);
    t.equal(store.balance, credits - store.charged, 'K of N: balance = credits − Σ usage rows, to the micro');
    t.equal(store.journal, store.balance, 'K of N: the journal sums to the balance');
    t.equal(store.charges, K, 'K of N: one charge per admitted call');
    await assertStormBooks(t, gateways[0].url, db, ok.map((r) => r.requestId!), LEASE_MS * 4 + 8000);
  });
}
