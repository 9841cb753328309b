// Redis stopped and started again (empty) under traffic, with two instances
// on a redis-server of this test's own: model calls are refused with 503 in
// the chat envelope while it is down (but for those a worker admits from an
// allotment it already holds: its admissions end with the second Redis went
// away in), the model list keeps answering, service comes back by itself,
// and no call is charged twice or left unbilled.
import t from 'tap';
import { micros } from '../helpers/money.js';
import { organization, provision, usageRows } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';
import { eventually, ownRedis, redisFor, sleep, startInstances, storeMoney, traffic, waitForSpread } from './scale-out-helpers.js';

const LEASE_MS = 3000;

const redis = await ownRedis(t);
const db = redis === null ? null : await testDatabase(t);
if (redis !== null && db !== null) {
  t.test('Redis stopped and started during traffic', async (t) => {
    const gateways = await startInstances(t, 2, { DATABASE_URL: db, REDIS_URL: redis.url, HOLD_LEASE_MS: String(LEASE_MS) });
    await waitForSpread(redisFor(t, redis.url), db, gateways);
    const credits = 100_000_000;
    const { key, orgId } = await provision(gateways[0].url, { balance: '100.00' });
    await eventually('the key reaches both instances', async () => (await fetch(`${gateways[1].url}/v1/key`, { headers: { authorization: `Bearer ${key}` } })).status === 200);

    const load = traffic(gateways, key, 'go [sim:words=4] [sim:delay_ms=100]', 3);
    await sleep(1000);
    const stoppedAt = Date.now();
    await redis.stop();
    const goneAt = Date.now(); // no grant can have been made after this
    await sleep(1500);
    const models = await Promise.all(gateways.map((g) => fetch(`${g.url}/v1/models`).then((r) => r.status)));
    t.same(models, [200, 200], 'GET /v1/models answers on both instances while Redis is down');
    await sleep(500);
    const startedAt = Date.now();
    await redis.start();
    const recovered = await eventually(
      'both instances serve model calls again',
      async () => gateways.every((_, i) => load.results.some((r) => r.target === i && r.status === 200 && r.startedAt > startedAt)),
      15_000,
    );
    t.ok(recovered < 10_000, `both instances served calls again ${recovered} ms after Redis came back, without a restart`);
    await sleep(500);
    const results = await load.stop();

    const down = results.filter((r) => r.startedAt > stoppedAt + 200 && r.endedAt < startedAt);
    t.ok(down.length > 0, `${down.length} calls made while Redis was down`);
    // An allotment's admissions are for one wall-clock second: none is spent after the second Redis went away in.
    const allotted = down.filter((r) => r.status === 200);
    const secondEnd = Math.floor(goneAt / 1000) * 1000 + 1000;
    t.same(
      allotted.filter((r) => r.startedAt >= secondEnd).map((r) => r.requestId),
      [],
      `${allotted.length} admitted from allotments the workers held, all in the second Redis went away in`,
    );
    t.ok(
      down.filter((r) => r.status !== 200).every((r) => r.status === 503 && r.code === 'service_unavailable' && r.type === 'api_error'),
      'every other one refused with 503 service_unavailable in the chat envelope',
    );
    const unexpected = results.filter((r) => r.status !== 200 && r.status !== 503);
    t.same(unexpected, [], 'every call answered 200 or 503');

    // Calls in flight when Redis went away settled all the same (straight to the store); their holds go when Redis is back.
    await eventually('no hold left', async () => (await organization(gateways[1].url, orgId)).held === '0.00', LEASE_MS * 3 + 5000);
    const ok = results.filter((r) => r.status === 200);
    await usageRows(gateways[0].url, orgId); // the console's usage list writes what every shard has queued first
    const store = await storeMoney(db, orgId);
    t.same(
      ok.filter((r) => !store.rows.has(r.requestId!)).map((r) => r.requestId),
      [],
      `all ${ok.length} served calls have their usage row`,
    );
    t.equal(store.balance, credits - store.charged, 'balance = credits − sum of usage rows');
    t.equal(store.journal, store.balance, 'the journal sums to the balance');
    t.equal(store.charges, store.chargedRows, 'one charge entry per charged usage row: nothing charged twice');
    const org = await organization(gateways[0].url, orgId);
    t.equal(micros(org.balance), store.balance, 'the running actor agrees with the store');
  });
}
