// With billing.flush_ms > 0 a worker's settlement is one way: settle()
// resolves once its XADD is on the socket, and nobody waits for the actor.
// Redis may then lose the entry unread (restarted empty before a shard owner
// read it). The worker keeps its recent settlements and, on reconnecting,
// sends them again marked check: the charge still reaches the store, once.
//
// On a redis-server of this test's own (stopped and started again empty; the
// shared one is never touched). No owner reads the shard while the entry sits
// in the stream (the first host has handed its shards off), so the loss is
// certain rather than a race.
import { randomUUID } from 'node:crypto';
import t from 'tap';
import type { ChangeBus } from '../../../src/bus/bus.js';
import { createOrganization } from '../../../src/organizations/store.js';
import { RedisLedgerClient } from '../../../src/ledger/redis/client.js';
import { RedisLedgerHost } from '../../../src/ledger/redis/host.js';
import { RedisKeys, redisPrefix } from '../../../src/ledger/redis/keys.js';
import { createLogger } from '../../../src/log/logger.js';
import { migrate } from '../../../src/store/migrate.js';
import { createPool } from '../../../src/store/pool.js';
import { ownRedis, sleep } from '../../e2e/scale-out-helpers.js';
import { testDatabase } from '../../helpers/services.js';
import { usage } from '../helpers.js';
import { tempDir } from '../../helpers/gateway.js';

/** The workers' books' files (a primary's data_dir/books in a real instance). */
const BOOKS_DIR = tempDir('tollgate-books-');

const SETTINGS = { flushMs: 100, journalMaxLagMs: 1000, holdLeaseMs: 3000, holdMaxMs: 60_000, quotaPerSecond: 1000, quotaPerMinute: 100_000 };
const bus: ChangeBus = { publish: async () => {}, subscribe: () => {}, close: async () => {} };

const redis = await ownRedis(t);
const db = redis === null ? null : await testDatabase(t);
if (redis !== null && db !== null) {
  t.test('a one-way settlement lost unread with the data of Redis is sent again on reconnecting and charged once', async (t) => {
    const logger = createLogger('silent', 'test');
    const pool = createPool(db, 4);
    t.teardown(() => pool.end());
    await migrate(pool);
    const keys = new RedisKeys(redisPrefix(db));
    const first = new RedisLedgerHost({ url: redis.url, keys, instanceId: `resend-${process.pid}-1`, pool, settings: SETTINGS, bus, logger, booksDir: BOOKS_DIR });
    const client = new RedisLedgerClient({ url: redis.url, keys, owner: `resend-${process.pid}/1`, ...SETTINGS, allotmentCalls: 0, databaseUrl: db, logger, booksDir: BOOKS_DIR });
    let second: RedisLedgerHost | null = null;
    t.teardown(async () => {
      await client.close();
      await first.close();
      await second?.close();
    });
    t.ok(await first.ready(15_000), 'the first host serves every shard');

    const credits = 1_000_000;
    const orgId = randomUUID();
    await createOrganization(pool, orgId, 'Resend', credits);
    const requestId = `resend_${randomUUID()}`;
    t.same(await client.reserve({ requestId, orgId, funding: 'balance', amount: 10_000 }), { ok: true }, 'hold taken');

    await first.close(); // every shard handed off: nobody reads the stream now
    await client.settle({ usage: { ...usage(requestId, 3000, 10_000, 'balance', orgId), finishedAt: Date.now() } });
    await client.delivered();

    await redis.stop(); // restarted empty: the entry is gone unread, and so is the hold's mirror
    await redis.start();
    second = new RedisLedgerHost({ url: redis.url, keys, instanceId: `resend-${process.pid}-2`, pool, settings: SETTINGS, bus, logger, booksDir: BOOKS_DIR });
    t.ok(await second.ready(15_000), 'a new host serves every shard');

    let rows: Array<{ b: string; n: string }> = [];
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(100)) {
      rows = (
        await pool.query(
          `SELECT (SELECT balance_micros FROM organization_money WHERE id = $1) AS b,
                  (SELECT count(*) FROM ledger_entries WHERE org_id = $1 AND kind = 'charge') AS n`,
          [orgId],
        )
      ).rows;
      if (Number(rows[0].n) > 0) break;
    }
    await sleep(500); // a second charge, were there one, would land by now
    const again = (await pool.query(`SELECT count(*) AS n FROM ledger_entries WHERE org_id = $1 AND kind = 'charge'`, [orgId])).rows[0];
    t.same([Number(rows[0].b), Number(again.n)], [credits - 3000, 1], 'the settlement reached the store, charged once');
  });
}
