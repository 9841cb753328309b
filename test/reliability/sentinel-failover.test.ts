// The ledger on Redis Sentinel (issue 36): two instances given a
// redis-sentinel:// URL (a primary, one replica, three sentinels of this
// test's own), a spend storm on both, and kill -9 of the Redis primary in the
// middle of it, while an organization funded for exactly K of N concurrent
// calls has its K running. After the sentinels promote the replica, calls go on; exactly K answered; the
// books are exact to the micro, every answered call has its usage row, no
// hold is left after the leases. The time calls were refused is measured and
// printed (the figure the README states).
import { Redis } from 'ioredis';
import t from 'tap';
import { sentinelTopology } from '../helpers/redis-topology.js';
import { provision } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';
import { formatMoney } from '../../src/money/money.js';
import { chat, countingSimulator, eventually, fundedForK, redisFor, startInstances, storeMoney, waitForSpread } from '../e2e/scale-out-helpers.js';
import { assertStormBooks } from './lib/rig.js';
import { storm } from './lib/load.js';

const LEASE_MS = 2000;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const db = await testDatabase(t);
const topo = db === null ? null : await sentinelTopology(t);
if (db !== null && topo !== null) {
  t.test('kill -9 of the Redis primary during a spend storm on two instances (Sentinel)', async (t) => {
    // The K of N calls (below): slow, so that they are still running at the kill, and counted at the supplier.
    const content = 'slow [sim:words=3] [sim:delay_ms=1500]';
    const { sim, received } = await countingSimulator(t, content);
    const env = { DATABASE_URL: db, REDIS_URL: topo.url, SIMULATOR_URL: sim.url, HOLD_LEASE_MS: String(LEASE_MS), QUOTA_PER_SECOND: '100000', QUOTA_PER_MINUTE: '10000000' };
    const gateways = await startInstances(t, 2, env);
    const redis = redisFor(t, topo.url);
    await waitForSpread(redis, db, gateways);
    const orgs = await Promise.all(Array.from({ length: 3 }, () => provision(gateways[0].url, { balance: '0.50' })));
    for (const o of orgs) await eventually('the key reaches both instances', async () => (await fetch(`${gateways[1].url}/v1/key`, { headers: { authorization: `Bearer ${o.key}` } })).status === 200);

    const load = storm(gateways.map((g) => g.url), orgs.map((o) => o.key), 6, ['chat', 'chat-stream'], 'storm [sim:words=30] [sim:delay_ms=5]');
    const results = load.results;
    // Exact K of N through the failover: an organization funded for exactly K slow calls, N at once over both
    // instances, and the primary killed once all K run at the supplier (their settlements ahead).
    const K = 5;
    const N = 40;
    const { credits } = fundedForK(content, K);
    const exact = await provision(gateways[0].url, { balance: formatMoney(credits) });
    await eventually('the key reaches both instances', async () => (await fetch(`${gateways[1].url}/v1/key`, { headers: { authorization: `Bearer ${exact.key}` } })).status === 200);
    await sleep(1500);
    const kOfN = Promise.all(Array.from({ length: N }, (_, i) => chat(gateways[i % 2].url, exact.key, content)));
    // Killed once the K run at the supplier (their callers told they are admitted), not once the organization's money
    // is held, which can be before (countingSimulator says how).
    await eventually('all K calls at the supplier', async () => received() >= K, 5000);
    // Lease rounds wait for the replica (WAIT) before they count: docs/billing.md, "Redis Sentinel".
    const primary = new Redis({ port: await topo.primaryPort(), host: '127.0.0.1', maxRetriesPerRequest: 0 });
    const stats = String(await primary.info('commandstats'));
    primary.disconnect();
    t.match(stats, /cmdstat_wait:calls=[1-9]/, 'lease rounds wait for the replica');
    const killedAt = Date.now();
    const oldPort = await topo.killPrimary();
    const promotedMs = await topo.waitForPromotion(oldPort);
    t.ok(true, `primary :${oldPort} killed; the sentinels promoted the replica :${await topo.primaryPort()} after ${promotedMs} ms`);
    // Calls go on: an answered call started after the promotion, on each instance.
    const promotedAt = killedAt + promotedMs;
    await eventually('calls answered again after the promotion', async () => results.some((r) => r.at > promotedAt && r.outcome === 'ok'), 15_000).catch((err) => {
      // What the calls and the instances said meanwhile, for whoever reads a failed run.
      const since = results.filter((r) => r.at > killedAt);
      const seen = new Map<string, number>();
      for (const r of since) seen.set(`${r.gw}:${r.outcome}:${r.status}`, (seen.get(`${r.gw}:${r.outcome}:${r.status}`) ?? 0) + 1);
      t.comment(`calls since the kill (instance:outcome:status × n): ${[...seen].map(([k, n]) => `${k} × ${n}`).join(', ')}`);
      for (const [i, gw] of gateways.entries()) {
        for (const l of gw.logs.filter((l) => l.level >= 40 && l.time >= killedAt).slice(-15)) t.comment(`instance ${i}: ${JSON.stringify(l)}`);
      }
      throw err;
    });
    await sleep(3000);
    await load.stop();
    const statuses = (await kOfN).map((c) => c.status);
    const tally = [...new Set(statuses)].map((s) => `${s} × ${statuses.filter((x) => x === s).length}`).join(', ');
    t.equal(statuses.filter((s) => s === 200).length, K, `exactly ${K} of ${N} admitted, answered through the failover (${tally})`);
    t.equal(received(), K, `the supplier received exactly ${K} of them`);
    t.same(statuses.filter((s) => s !== 200 && s !== 402 && s !== 503), [], 'the rest refused: 402 (no money), 503 (during the failover)');

    const broken = results.filter((r) => r.outcome === 'broken');
    t.same(broken, [], `${results.length} calls: every refusal in its envelope, every stream ended as the spec says`);
    const ok = results.filter((r) => r.outcome === 'ok');
    const before = ok.filter((r) => r.at < killedAt).length;
    const after = ok.filter((r) => r.at > promotedAt).length;
    t.ok(before > 20 && after > 20, `${before} calls answered before the kill, ${after} after the promotion`);
    for (const gw of [0, 1]) t.ok(ok.some((r) => r.gw === gw && r.at > promotedAt), `instance ${gw} answers calls after the promotion`);
    // What a failover cost callers: the span with no answered call, and the calls refused in it.
    const okEnds = ok.map((r) => r.at + r.ms).sort((a, b) => a - b);
    let gap = 0;
    for (let i = 1; i < okEnds.length; i++) if (okEnds[i - 1] >= killedAt - 1000) gap = Math.max(gap, okEnds[i] - okEnds[i - 1]);
    const refused = results.filter((r) => r.outcome !== 'ok' && r.at >= killedAt - 500);
    t.comment(`failover cost: promotion ${promotedMs} ms after kill -9; longest span without an answered call ${Math.round(gap)} ms; ${refused.length} calls refused (${[...new Set(refused.map((r) => r.status))].join(', ')}) of ${results.length}`);

    const store = await storeMoney(db, exact.orgId);
    t.equal(store.balance, credits - store.charged, 'K of N: balance = credits − Σ usage rows, to the micro');
    t.equal(store.journal, store.balance, 'K of N: the journal sums to the balance');
    t.equal(store.charges, K, 'K of N: one charge per admitted call');
    await assertStormBooks(t, gateways[0].url, db, ok.map((r) => r.requestId!), LEASE_MS * 4 + 8000);
  });
}
