// kill -9 of the instance that owns an organization's shard, mid-traffic:
// the other instance takes the shard over, the dead instance's holds are
// released one lease later, and no settlement any caller saw acknowledged
// (every 200) is missing from PostgreSQL once the dead instance has started
// again on its data_dir (its workers' books: docs/billing.md); nothing is
// charged twice.
import t from 'tap';
import { micros } from '../helpers/money.js';
import { shardOf } from '../../src/ledger/redis/keys.js';
import { organization, provision, usageRows } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';
import { eventually, killInstance, ownerOf, redisFor, restartInstance, sharedRedis, sleep, startInstances, storeMoney, traffic, waitForSpread } from './scale-out-helpers.js';

const LEASE_MS = 3000;

const redisUrl = await sharedRedis(t);
const db = redisUrl === null ? null : await testDatabase(t);
if (redisUrl !== null && db !== null) {
  t.test('the owner of a shard killed mid-traffic', async (t) => {
    const env = { DATABASE_URL: db, REDIS_URL: redisUrl, HOLD_LEASE_MS: String(LEASE_MS) };
    const gateways = await startInstances(t, 2, env);
    const redis = redisFor(t, redisUrl);
    await waitForSpread(redis, db, gateways);
    const credits = 100_000_000;
    const { key, orgId } = await provision(gateways[0].url, { balance: '100.00' });
    await eventually('the key reaches both instances', async () => (await fetch(`${gateways[1].url}/v1/key`, { headers: { authorization: `Bearer ${key}` } })).status === 200);
    const owner = (await ownerOf(redis, db, orgId, gateways))!;
    const survivor = gateways.find((g) => g !== owner)!;
    t.ok(owner, `shard ${shardOf(orgId)} is owned by one of the instances`);

    const load = traffic(gateways, key, 'go [sim:words=4] [sim:delay_ms=120]', 4);
    await sleep(1500);
    const killedAt = Date.now();
    killInstance(owner);
    const takeover = await eventually('the survivor owns the shard', async () => (await ownerOf(redis, db, orgId, gateways)) === survivor);
    t.ok(takeover < 6000, `the survivor took the shard over ${takeover} ms after the kill`);
    await sleep(1000);
    const results = await load.stop();
    const held = await organization(survivor.url, orgId);
    // The view recalls the live workers' allotments; the dead instance's workers cannot answer, so what they held stays held.
    t.ok(micros(held.held) > 0, `the dead instance's calls and allotments still hold money (${held.held}, ${held.open_holds} holds of calls) until their lease runs out`);
    // Its calls settled in the last flush_ms are in its workers' books only: written when it starts again on its data_dir.
    const restarted = await restartInstance(gateways, owner, env);
    t.ok(restarted, 'the killed instance started again on its data_dir');

    const ok = results.filter((r) => r.status === 200);
    const beforeKill = ok.filter((r) => r.target === gateways.indexOf(owner));
    const afterTakeover = ok.filter((r) => r.target === gateways.indexOf(survivor) && r.startedAt > killedAt + takeover);
    t.ok(beforeKill.length > 0, `${beforeKill.length} calls served by the doomed instance before it died`);
    t.ok(afterTakeover.length > 0, `${afterTakeover.length} calls served by the survivor after the takeover`);
    const refused = results.filter((r) => r.status === 503 && r.code === 'service_unavailable');
    const other = results.filter((r) => ![0, 200].includes(r.status) && !refused.includes(r));
    t.same(other, [], `every call answered 200, or 503 service_unavailable while the shard had no owner (${refused.length}), or was cut with its instance`);

    await eventually('the dead instance’s holds are released', async () => (await organization(survivor.url, orgId)).held === '0.00', LEASE_MS * 3 + 5000);
    t.ok(Date.now() >= killedAt + LEASE_MS, `released ${Date.now() - killedAt} ms after the kill: not before their lease ran out`);

    const rows = new Set((await usageRows(survivor.url, orgId)).map((r) => r.request_id));
    const store = await storeMoney(db, orgId);
    const missing = ok.filter((r) => !store.rows.has(r.requestId!));
    t.same(missing.map((r) => r.requestId), [], `all ${ok.length} acknowledged settlements are in PostgreSQL`);
    t.ok(rows.size > 0, 'the console lists them');
    t.equal(store.balance, credits - store.charged, 'balance = credits − sum of usage rows');
    t.equal(store.journal, store.balance, 'the journal sums to the balance');
    t.equal(store.charges, store.chargedRows, 'one charge entry per charged usage row: nothing charged twice');
    const org = await organization(survivor.url, orgId);
    t.equal(micros(org.balance), store.balance, 'the running actor agrees with the store');
  });
}
