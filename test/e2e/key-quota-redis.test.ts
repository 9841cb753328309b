// A key's own request quota on the Redis-streams ledger host (issue 35): two
// instances of two workers each, one Redis; a reservation carries the key's
// quota to the organization's actor wherever its shard is owned, so a key with
// a quota of 3 gets exactly 3 of 16 concurrent calls spread over both.
import t from 'tap';
import { console_, provision } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';
import { chat, eventually, redisFor, sharedRedis, startInstances, waitForSpread } from './scale-out-helpers.js';

const redisUrl = await sharedRedis(t);
const db = redisUrl === null ? null : await testDatabase(t);
if (redisUrl !== null && db !== null) {
  const [a, b] = await startInstances(t, 2, { DATABASE_URL: db, REDIS_URL: redisUrl }, 2);
  await waitForSpread(redisFor(t, redisUrl), db, [a, b]);

  t.test('quota_per_minute 3 over two instances: exactly 3 of 16 admitted, the rest 429 rate_limited', async (t) => {
    const { orgId, key: other } = await provision(a.url);
    const limited = await console_(a.url, 'POST', `/organizations/${orgId}/keys`, { name: 'limited', quota_per_minute: 3 });
    await eventually('the key reaches instance b', async () => (await fetch(`${b.url}/v1/key`, { headers: { authorization: `Bearer ${limited.secret}` } })).status === 200);
    const results = await Promise.all(Array.from({ length: 16 }, (_, i) => chat(i % 2 === 0 ? a.url : b.url, limited.secret, 'hi [sim:words=2] [sim:delay_ms=200]')));
    t.equal(results.filter((r) => r.status === 200).length, 3, 'exactly 3 admitted');
    t.equal(results.filter((r) => r.status === 429 && r.code === 'rate_limited').length, 13, 'the rest refused by the key\'s quota');
    const others = await Promise.all(Array.from({ length: 6 }, (_, i) => chat(i % 2 === 0 ? a.url : b.url, other, 'hi [sim:words=2]')));
    t.same(others.map((r) => r.status), Array(6).fill(200), 'another key of the organization is served');
  });
}
