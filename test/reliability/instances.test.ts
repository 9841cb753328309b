// Reliability, whole instances killed (issue 17): two instances on one
// PostgreSQL and one Redis (the shared ones: nothing here stops them), a
// spend storm on both, and kill -9 of a whole instance (primary and workers)
// twice in a loop, each restarted on its data_dir. Afterwards: every answer
// in its envelope, every acknowledged call billed, books exact, the dead
// instances' holds released one lease later.
import t from 'tap';
import { provision } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';
import { eventually, killInstance, redisFor, restartInstance, sharedRedis, startInstances, waitForSpread } from '../e2e/scale-out-helpers.js';
import { missingRows } from './lib/books.js';
import { assertStormBooks } from './lib/rig.js';
import { call, type CallResult } from './lib/load.js';

const LEASE_MS = 2000;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const redisUrl = await sharedRedis(t);
const db = redisUrl === null ? null : await testDatabase(t);
if (redisUrl !== null && db !== null) {
  const partial: Array<{ id: string; gateway: number }> = [];

  t.test('kill -9 of a whole instance, twice, during a spend storm on two instances', async (t) => {
    const env = { DATABASE_URL: db, REDIS_URL: redisUrl, HOLD_LEASE_MS: String(LEASE_MS), QUOTA_PER_SECOND: '100000', QUOTA_PER_MINUTE: '10000000' };
    const gateways = await startInstances(t, 2, env);
    const redis = redisFor(t, redisUrl);
    await waitForSpread(redis, db, gateways);
    const orgs = await Promise.all(Array.from({ length: 3 }, () => provision(gateways[0].url, { balance: '0.50' })));
    for (const o of orgs) await eventually('the key reaches both instances', async () => (await fetch(`${gateways[1].url}/v1/key`, { headers: { authorization: `Bearer ${o.key}` } })).status === 200);

    // Callers aim at whichever instances are alive now (a replaced instance has a new address).
    const alive = [...gateways];
    const results: CallResult[] = [];
    let running = true;
    const loops = Array.from({ length: 8 }, async (_, i) => {
      let n = i;
      while (running) {
        const gw = alive[n % alive.length];
        const r = await call(gw.url, orgs[n % orgs.length].key, n++ % 2 === 0 ? 'chat' : 'chat-stream', 'storm [sim:words=40] [sim:delay_ms=5]');
        results.push(r);
        if (r.outcome !== 'ok') await sleep(30);
      }
    });
    // Streams with output delivered on the instance about to die: billed or not (issue 17's second defect).
    const watchStreams = async (gatewayIndex: number): Promise<void> => {
      const gw = alive[gatewayIndex];
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          const res = await fetch(`${gw.url}/v1/chat/completions`, {
            method: 'POST',
            headers: { authorization: `Bearer ${orgs[0].key}`, 'content-type': 'application/json' },
            body: JSON.stringify({ model: 'nw-swift-1', stream: true, max_tokens: 4000, messages: [{ role: 'user', content: 'long [sim:words=3000] [sim:delay_ms=10]' }] }),
          }).catch(() => null);
          if (res === null || res.status !== 200) return;
          const reader = res.body!.getReader();
          let text = '';
          try {
            while (!text.includes('"content":"')) text += Buffer.from((await reader.read()).value!).toString();
            partial.push({ id: res.headers.get('x-request-id')!, gateway: gatewayIndex });
            for (;;) if ((await reader.read()).done) break;
          } catch {
            // cut with its instance
          }
        }),
      );
    };
    for (let round = 0; round < 2; round++) {
      await sleep(1500);
      const victim = round % 2;
      const streams = watchStreams(victim);
      await sleep(500);
      killInstance(alive[victim]);
      await streams;
      // Restarted on its data_dir, as a supervisor does: what its workers' books held that the store had not (at most flush_ms of calls) is written at start.
      const replacement = await restartInstance(gateways, alive[victim], env); // stopped at teardown with the others
      alive[victim] = replacement;
      t.ok(true, `round ${round + 1}: instance ${victim} killed and replaced`);
    }
    await sleep(1500);
    running = false;
    await Promise.all(loops);

    const broken = results.filter((r) => r.outcome === 'broken');
    t.same(broken, [], `${results.length} calls: every refusal in its envelope, every stream ended as the spec says`);
    const ok = results.filter((r) => r.outcome === 'ok');
    t.ok(ok.length > 50, `${ok.length} calls answered`);
    await assertStormBooks(t, alive[0].url, db, ok.map((r) => r.requestId!), LEASE_MS * 4 + 8000);
  });

  t.test('output delivered before an instance’s kill -9 is billed', async (t) => {
    t.ok(partial.length > 0, `${partial.length} streams had delivered output when their instance died`);
    t.same(await missingRows(db, partial.map((p) => p.id)), [], 'each has a usage row');
  });
}
