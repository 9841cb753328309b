// A worker whose books the store has stopped taking (billing.journal_max_lag_ms
// passed) takes no call from its allotment either: the allotment's fast path
// (LedgerClient.reserveHere) answers false, as reserve() would wait, though the
// allotment still has room. Otherwise a host that crashed then could lose more
// than flush_ms of charges (docs/billing.md, "Durability").
//
// One host and one worker client on a redis-server of this test's own; the
// worker's books go to PostgreSQL through a proxy the test cuts. Everything
// happens within one second, since an allotment is for the second it was
// granted in: otherwise a stale allotment would refuse the call for that reason.
import { randomUUID } from 'node:crypto';
import t from 'tap';
import type { ChangeBus } from '../../../src/bus/bus.js';
import { RedisLedgerClient } from '../../../src/ledger/redis/client.js';
import { RedisLedgerHost } from '../../../src/ledger/redis/host.js';
import { RedisKeys, redisPrefix } from '../../../src/ledger/redis/keys.js';
import { createLogger } from '../../../src/log/logger.js';
import { createOrganization } from '../../../src/organizations/store.js';
import { migrate } from '../../../src/store/migrate.js';
import { createPool } from '../../../src/store/pool.js';
import { ownRedis, sleep } from '../../e2e/scale-out-helpers.js';
import { tempDir } from '../../helpers/gateway.js';
import { testDatabase } from '../../helpers/services.js';
import { proxiedDatabase } from '../../helpers/tcp-proxy.js';
import { usage } from '../helpers.js';
import { secondBegun } from '../../helpers/clock.js';

const BOOKS_DIR = tempDir('tollgate-books-');
const MAX_LAG_MS = 100;
const SETTINGS = { flushMs: 20, journalMaxLagMs: MAX_LAG_MS, holdLeaseMs: 15_000, holdMaxMs: 3_600_000, quotaPerSecond: 100_000, quotaPerMinute: 10_000_000 };
const bus: ChangeBus = { publish: async () => {}, subscribe: () => {}, close: async () => {} };
const AMOUNT = 1000;

const redis = await ownRedis(t);
const db = redis === null ? null : await testDatabase(t);
if (redis !== null && db !== null) {
  t.test('the store behind this worker: no call taken from its allotment, though it has room', async (t) => {
    const logger = createLogger(process.env.TEST_LOG ?? 'silent', 'test');
    const pool = createPool(db, 4);
    t.teardown(() => pool.end());
    await migrate(pool);
    const { proxy, url: booksUrl } = await proxiedDatabase(db);
    t.teardown(() => proxy.close());
    const keys = new RedisKeys(redisPrefix(db));
    const host = new RedisLedgerHost({ url: redis.url, keys, instanceId: `behind-${process.pid}`, pool, settings: SETTINGS, bus, logger, booksDir: BOOKS_DIR });
    const client = new RedisLedgerClient({ url: redis.url, keys, owner: `behind-${process.pid}/1`, ...SETTINGS, allotmentCalls: 32, databaseUrl: booksUrl, logger, booksDir: BOOKS_DIR });
    let cut = false;
    t.teardown(async () => {
      if (cut) await proxy.restore();
      await client.close();
      await host.close();
    });
    t.ok(await host.ready(15_000), 'the host serves every shard');
    const orgId = randomUUID();
    await createOrganization(pool, orgId, 'Behind', 10_000_000);
    const req = (): { requestId: string; orgId: string; funding: 'balance'; amount: number } => ({ requestId: `req_${randomUUID()}`, orgId, funding: 'balance', amount: AMOUNT });
    // Warm: the organization known to its owner and the connections up, so that the second below holds everything.
    const warm = req();
    t.ok((await client.reserve(warm)).ok, 'a call before');
    await client.settle({ usage: { ...usage(warm.requestId, 400, AMOUNT, 'balance', orgId), finishedAt: Date.now() } });

    // Up to a few tries: the steps must fall in one second (a slow machine may miss one).
    let checked = false;
    for (let attempt = 0; attempt < 5 && !checked; attempt++) {
      await secondBegun();
      const second = Math.floor(Date.now() / 1000);
      const first = req();
      t.ok((await client.reserve(first)).ok, 'the first call of the second is asked of the owner, with an allotment');
      const taken = req();
      if (!client.reserveHere(taken)) {
        t.comment(`attempt ${attempt}: the allotment did not take the second call; again`);
        continue;
      }
      await proxy.cut();
      cut = true;
      for (const r of [first, taken]) await client.settle({ usage: { ...usage(r.requestId, 400, AMOUNT, 'balance', orgId), finishedAt: Date.now() } });
      await sleep(MAX_LAG_MS + 3 * SETTINGS.flushMs + 60);
      const refused = client.reserveHere(req());
      if (Math.floor(Date.now() / 1000) !== second) {
        t.comment(`attempt ${attempt}: the second passed before the check; again`);
        await proxy.restore();
        cut = false;
        continue;
      }
      t.equal(refused, false, `not taken here once the books are ${MAX_LAG_MS} ms behind`);
      checked = true;
      await proxy.restore();
      cut = false;
    }
    t.ok(checked, 'checked within one second');
  });
}
