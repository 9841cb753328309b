// The Redis ledger host says ready only once it can serve: it holds the
// shards it is entitled to (alone: all of them) and has started their actors,
// or knows which instance holds the others. A reservation sent the moment
// ready() resolves is answered, never refused with 503 for want of an owner.
import { randomBytes, randomUUID } from 'node:crypto';
import t from 'tap';
import type { ChangeBus } from '../../../src/bus/bus.js';
import { createOrganization } from '../../../src/organizations/store.js';
import { RedisLedgerClient } from '../../../src/ledger/redis/client.js';
import { RedisLedgerHost } from '../../../src/ledger/redis/host.js';
import { RedisKeys, SHARDS } from '../../../src/ledger/redis/keys.js';
import { createLogger } from '../../../src/log/logger.js';
import { migrate } from '../../../src/store/migrate.js';
import { createPool } from '../../../src/store/pool.js';
import { sharedRedis } from '../../e2e/scale-out-helpers.js';
import { testDatabase } from '../../helpers/services.js';
import { Redis } from 'ioredis';
import { tempDir } from '../../helpers/gateway.js';

/** The workers' books' files (a primary's data_dir/books in a real instance). */
const BOOKS_DIR = tempDir('tollgate-books-');

/** What the host publishes (organization changes) is not this test's subject: a bus that carries nothing. */
const QUIET_BUS: ChangeBus = { publish: async () => {}, subscribe: () => {}, close: async () => {} };

const SETTINGS = { flushMs: 100, journalMaxLagMs: 1000, holdLeaseMs: 15_000, holdMaxMs: 3_600_000, quotaPerSecond: 1000, quotaPerMinute: 100_000 };
const logger = createLogger('silent', 'test');

const redisUrl = await sharedRedis(t);
const db = redisUrl === null ? null : await testDatabase(t);
if (redisUrl !== null && db !== null) {
  const pool = createPool(db, 4);
  await migrate(pool);
  const redis = new Redis(redisUrl);
  const run = randomBytes(4).toString('hex');
  const prefixes: string[] = [];
  t.teardown(async () => {
    for (const p of prefixes) {
      const keys = await redis.keys(`${p}*`);
      if (keys.length > 0) await redis.del(...keys);
    }
    redis.disconnect();
    await pool.end();
  });
  const orgs = await Promise.all(Array.from({ length: SHARDS * 4 }, async (_, i) => (await createOrganization(pool, randomUUID(), `org ${i}`, 1_000_000_000)).id));

  const host = (keys: RedisKeys, id: string): RedisLedgerHost =>
    new RedisLedgerHost({ url: redisUrl, keys, instanceId: id, pool, settings: SETTINGS, bus: QUIET_BUS, logger, booksDir: BOOKS_DIR });
  const client = (keys: RedisKeys, owner: string): RedisLedgerClient =>
    new RedisLedgerClient({ url: redisUrl, keys, owner, holdLeaseMs: SETTINGS.holdLeaseMs, holdMaxMs: SETTINGS.holdMaxMs, flushMs: 100, journalMaxLagMs: SETTINGS.journalMaxLagMs, allotmentCalls: 0, databaseUrl: db, logger, booksDir: BOOKS_DIR });
  const reserveAll = (c: RedisLedgerClient, round: string) =>
    Promise.all(
      orgs.map((orgId, i) =>
        c.reserve({ requestId: `req_${round}_${i}`, orgId, funding: 'balance', amount: 1000 }).then(
          (r) => (r.ok ? 'ok' : `refused ${r.code}`),
          (err: Error) => `failed: ${err.message}`,
        ),
      ),
    );

  t.test('issue 12 item 13: a host reserved through the moment it says ready never answers 503, round after round', async (t) => {
    const outcomes = new Map<string, number>();
    for (let round = 0; round < 30; round++) {
      const prefix = `tollgate:test-ready-${run}-${round}:`;
      prefixes.push(prefix);
      const keys = new RedisKeys(prefix);
      const h = host(keys, `i-${round}`);
      await h.ready();
      // Workers forked once the host is ready: each starts its connections and reserves at once.
      const workers = Array.from({ length: 4 }, (_, w) => client(keys, `w-${round}/${w}`));
      const replies = await Promise.all(workers.map((c, w) => reserveAll(c, `${round}-${w}`)));
      for (const o of replies.flat()) outcomes.set(o, (outcomes.get(o) ?? 0) + 1);
      await Promise.all(workers.map((c) => c.close()));
      await h.close();
    }
    t.same([...outcomes.keys()], ['ok'], `every reservation answered: ${JSON.stringify(Object.fromEntries(outcomes))}`);
  });

  const fresh = (name: string): RedisKeys => {
    const prefix = `tollgate:test-ready-${run}-${name}:`;
    prefixes.push(prefix);
    return new RedisKeys(prefix);
  };

  t.test('issue 12 item 13: alone, ready means all 16 shards held, even while a dead instance is still registered', async (t) => {
    const keys = fresh('stale');
    // An instance that died a moment ago (kill -9): still in the register for a lease, so the fair share is 8 at first.
    const [sec, usec] = await redis.time();
    await redis.zadd(keys.instances, Number(sec) * 1000 + Math.floor(Number(usec) / 1000), 'dead-instance');
    const h = host(keys, 'alone');
    t.teardown(() => h.close());
    const started = Date.now();
    t.equal(await h.ready(10_000), true, `ready after ${Date.now() - started} ms`);
    t.equal(h.shards().length, SHARDS, 'holds every shard when it says ready');
    const c = client(keys, 'alone/1');
    t.teardown(() => c.close());
    t.same([...new Set(await reserveAll(c, 'stale'))], ['ok'], 'and answers a reservation on each at once');
  });

  t.test('issue 12 item 13: two instances: ready when every shard has an owner, a call to the other\'s shard is served', async (t) => {
    for (const together of [false, true]) {
      const keys = fresh(together ? 'pair-together' : 'pair-after');
      const a = host(keys, 'a');
      if (!together) t.equal(await a.ready(10_000), true, 'a alone is ready');
      const b = host(keys, 'b');
      const started = Date.now();
      t.same(await Promise.all([a.ready(10_000), b.ready(10_000)]), [true, true], `${together ? 'started together' : 'b joining'}: both ready after ${Date.now() - started} ms`);
      t.ok(Date.now() - started < 1500, 'within a few lease rounds: b need not wait for its share to be handed over');
      const [ca, cb] = [client(keys, 'a/1'), client(keys, 'b/1')];
      const outcomes = [...(await reserveAll(ca, `${together}-a`)), ...(await reserveAll(cb, `${together}-b`))];
      t.same([...new Set(outcomes)], ['ok'], `every reservation answered through both instances (${outcomes.length})`);
      await Promise.all([ca.close(), cb.close()]);
      await Promise.all([a.close(), b.close()]);
    }
  });
}
