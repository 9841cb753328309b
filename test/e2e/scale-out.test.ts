// Two gateway instances (separate processes, different ports) sharing one
// PostgreSQL and one Redis: the Redis-streams ledger host serializes an
// organization's reservations across both, so an organization funded for
// exactly K maximum-bound calls admits exactly K of 60 concurrent calls spread
// over the two, and the money adds up in the store.
import t from 'tap';
import { formatMoney } from '../../src/money/money.js';
import { micros } from '../helpers/money.js';
import { console_, organization, provision, usageRows } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';
import { chat, eventually, fundedForK, ownerOf, redisFor, sharedRedis, startInstances, storeMoney, waitForSpread } from './scale-out-helpers.js';

/** The demo catalog's price of nw-swift-1 (config/catalog.seed.json). */

const redisUrl = await sharedRedis(t);
const db = redisUrl === null ? null : await testDatabase(t);
if (redisUrl !== null && db !== null) {
  const [a, b] = await startInstances(t, 2, { DATABASE_URL: db, REDIS_URL: redisUrl }, 2);
  const redis = redisFor(t, redisUrl);

  t.test('the shards spread over both instances', async (t) => {
    await waitForSpread(redis, db, [a, b]);
    t.pass('every shard owned, eight each');
  });

  t.test('funded for exactly K maximum-bound calls, 60 at once over two instances: exactly K admitted', async (t) => {
    const K = 7;
    const content = 'slow [sim:words=3] [sim:delay_ms=400]';
    const { credits } = fundedForK(content, K);
    const { key, orgId } = await provision(a.url, { balance: formatMoney(credits) });
    await eventually('the key reaches instance b', async () => (await fetch(`${b.url}/v1/key`, { headers: { authorization: `Bearer ${key}` } })).status === 200);

    let watching = true;
    const available: number[] = [];
    const watcher = (async () => {
      for (let i = 0; watching; i++) {
        const org = await organization(i % 2 === 0 ? a.url : b.url, orgId);
        available.push(micros(org.available), micros(org.balance));
      }
    })();
    const calls = await Promise.all(Array.from({ length: 60 }, (_, i) => chat(i % 2 === 0 ? a.url : b.url, key, content)));
    watching = false;
    await watcher;
    const statuses = calls.map((c) => c.status);
    t.equal(statuses.filter((s) => s === 200).length, K, `exactly ${K} admitted`);
    t.equal(statuses.filter((s) => s === 402).length, 60 - K, 'the rest refused with 402');
    t.ok(
      [0, 1].every((side) => calls.some((c, i) => i % 2 === side && c.status === 402)),
      'both instances refused calls: their reservations met in the same actor',
    );
    t.ok(available.length > 0, 'the watcher sampled the organization');
    t.ok(Math.min(...available) >= 0, `balance and available never negative: lowest ${Math.min(...available)} micros over ${available.length / 2} samples`);

    const rows = await usageRows(b.url, orgId);
    t.equal(rows.length, K, 'one usage row per admitted call');
    const charged = rows.reduce((sum, r) => sum + micros(r.charged), 0);
    const org = await organization(b.url, orgId);
    t.equal(micros(org.balance), credits - charged, 'balance = credits − sum of usage rows, to the micro');
    t.equal(org.held, '0.00', 'no hold left');
    const store = await storeMoney(db, orgId);
    t.equal(store.balance, credits - charged, 'the store agrees');
    t.equal(store.journal, store.balance, 'the journal sums to the balance');
    t.equal(store.charges, K, 'one charge entry per admitted call');
  });

  t.test('quotas and credits are the organization’s, whichever instance a call reaches', async (t) => {
    const { key, orgId } = await provision(a.url, { balance: '0.00' });
    await eventually('the key reaches instance b', async () => (await fetch(`${b.url}/v1/key`, { headers: { authorization: `Bearer ${key}` } })).status === 200);
    await console_(b.url, 'PATCH', `/organizations/${orgId}`, { quota_per_minute: 5 });
    const credited = await console_(b.url, 'POST', `/organizations/${orgId}/credits`, { amount: '1.00', target: 'balance' });
    t.equal(credited.organization.balance, '1.00', 'a credit through one instance…');
    const content = 'hi [sim:words=1]';
    const calls = await Promise.all(Array.from({ length: 12 }, (_, i) => chat(i % 2 === 0 ? a.url : b.url, key, content, 16)));
    t.equal(calls.filter((c) => c.status === 200).length, 5, '…is spent through both, and the per-minute quota of 5 counts calls on both');
    t.ok(calls.filter((c) => c.status !== 200).every((c) => c.status === 429 && c.code === 'rate_limited'), 'the other 7 answered 429 rate_limited');
    t.ok([0, 1].every((side) => calls.some((c, i) => i % 2 === side && c.status === 429)), 'refusals on both instances');
  });

  t.test('a key revoked through one instance is refused by the other within a second', async (t) => {
    const { key, keyId } = await provision(a.url, { balance: '1.00' });
    const check = (url: string) => fetch(`${url}/v1/key`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.status);
    await eventually('the key reaches instance b', async () => (await check(b.url)) === 200);
    await console_(a.url, 'POST', `/keys/${keyId}/revoke`);
    const ms = await eventually('instance b refuses the key', async () => (await check(b.url)) === 401, 5000);
    t.ok(ms < 1000, `refused by the other instance ${ms} ms after the revocation (PostgreSQL LISTEN/NOTIFY)`);
  });

  t.test('SIGTERM of a shard owner hands its shards off at once, open holds included', async (t) => {
    const { key, orgId } = await provision(a.url, { balance: '50.00' });
    await eventually('the key reaches instance b', async () => (await fetch(`${b.url}/v1/key`, { headers: { authorization: `Bearer ${key}` } })).status === 200);
    const owner = (await ownerOf(redis, db, orgId, [a, b]))!;
    const other = owner === a ? b : a;
    // Calls through the other instance, still running when the owner leaves: their holds must move with the shard.
    const calls = Promise.all(Array.from({ length: 4 }, () => chat(other.url, key, 'long [sim:words=6] [sim:delay_ms=2500]', 32)));
    await eventually('the calls hold money', async () => (await organization(other.url, orgId)).open_holds === 4);
    const stoppedAt = Date.now();
    t.equal(await owner.stop('SIGTERM'), 0, 'the owner exits cleanly');
    const moved = await eventually('the other instance owns the shard', async () => (await ownerOf(redis, db, orgId, [a, b])) === other);
    t.ok(Date.now() - stoppedAt < 2000, `shard moved ${Date.now() - stoppedAt} ms after the SIGTERM (${moved} ms after the exit), before its lease could run out`);
    t.equal((await organization(other.url, orgId)).open_holds, 4, 'the new owner adopted the 4 holds');
    const results = await calls;
    t.same(results.map((r) => r.status), [200, 200, 200, 200], 'the calls in flight settled against their adopted holds');
    const rows = await usageRows(other.url, orgId);
    t.equal(rows.length, 4, 'four usage rows');
    t.ok(rows.every((r) => r.hold_expired === false), 'no settlement found its hold gone');
    const org = await organization(other.url, orgId);
    t.equal(org.held, '0.00', 'no hold left');
    const store = await storeMoney(db, orgId);
    t.equal(store.balance, 50_000_000 - store.charged, 'balance = credits − sum of usage rows');
  });
}
