// A Redis stall longer than the settlement timeout (issue 17): a worker's
// settlements time out, it writes them to PostgreSQL itself, and the same
// commands reach the shard's actor when Redis resumes. The actor's view of
// the organization must equal the store's at every moment — before, during
// and after the replay — not only after the next reconcile: no double count
// (false 402s), no missing charge (an overspend window).
//
// In one process, on a redis-server of this test's own (SIGSTOP/SIGCONT; the
// shared one is never touched): the host's memory is read directly, every
// couple of milliseconds, so a drift of a few tens of ms cannot hide.
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
  t.test('settlements written directly during a stall and replayed after it: the actor view never drifts', async (t) => {
    const logger = createLogger('silent', 'test');
    const pool = createPool(db, 4);
    t.teardown(() => pool.end());
    await migrate(pool);
    const keys = new RedisKeys(redisPrefix(db));
    const host = new RedisLedgerHost({ url: redis.url, keys, instanceId: `stall-${process.pid}-1`, pool, settings: SETTINGS, bus, logger, booksDir: BOOKS_DIR });
    const client = new RedisLedgerClient({ url: redis.url, keys, owner: `stall-${process.pid}/1`, ...SETTINGS, allotmentCalls: 0, databaseUrl: db, logger, booksDir: BOOKS_DIR });
    t.teardown(async () => {
      redis.resume();
      await client.close();
      await host.close();
    });
    t.ok(await host.ready(15_000), 'the host serves every shard');

    const credits = 1_000_000;
    const orgId = randomUUID();
    await createOrganization(pool, orgId, 'Stall', credits);
    const N = 20;
    const holds = Array.from({ length: N }, (_, i) => ({ requestId: `stall_${i}_${randomUUID()}`, orgId, funding: 'balance' as const, amount: 10_000 }));
    const replies = await Promise.all(holds.map((h) => client.reserve(h)));
    t.ok(replies.every((r) => r.ok), `${N} holds taken`);
    const charges = holds.map((_, i) => 3000 + i);
    const final = credits - charges.reduce((a, b) => a + b, 0);

    redis.pause();
    // Each settlement's command reaches the stalled server's socket, times out, and is written to the store directly
    // (with flush_ms > 0 settle() resolves once the command is on the socket; delivered() once each one is somewhere).
    await Promise.all(holds.map((h, i) => client.settle({ usage: { ...usage(h.requestId, charges[i], h.amount, 'balance', orgId), finishedAt: Date.now() } })));
    await client.delivered();
    const stored = Number((await pool.query('SELECT balance_micros FROM organization_money WHERE id = $1', [orgId])).rows[0].balance_micros);
    t.equal(stored, final, 'every settlement is in the store while Redis is stalled');
    await sleep(1500); // at least one reconcile: memory has read the store's new balance

    // Sample the actor's view while the stalled commands are replayed and the shard is re-taken.
    const samples: Array<{ at: number; balance: number; held: number }> = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const v = await host.localAccount(orgId).catch(() => null);
        if (v !== null) samples.push({ at: Date.now(), balance: v.balance, held: v.heldBalance });
        await sleep(2);
      }
    })();
    const resumedAt = Date.now();
    redis.resume();
    await sleep(6000);
    sampling = false;
    await sampler;

    const after = samples.filter((s) => s.at > resumedAt);
    t.ok(after.length > 200, `${after.length} samples of the actor's view after Redis resumed`);
    const wrong = samples.filter((s) => s.balance !== final);
    t.same(
      wrong.slice(0, 5).map((s) => ({ msAfterResume: s.at - resumedAt, balance: s.balance, store: final })),
      [],
      `the actor's balance equals the store's at every sample (${wrong.length} of ${samples.length} differ)`,
    );
    const overHeld = samples.filter((s) => s.held > s.balance);
    t.equal(overHeld.length, 0, 'open holds never exceed the balance');

    const store = await pool.query(
      `SELECT (SELECT balance_micros FROM organization_money WHERE id = $1) AS b,
              (SELECT coalesce(sum(amount_micros), 0) FROM ledger_entries WHERE org_id = $1) AS j,
              (SELECT count(*) FROM ledger_entries WHERE org_id = $1 AND kind = 'charge') AS n`,
      [orgId],
    );
    t.same([Number(store.rows[0].b), Number(store.rows[0].j), Number(store.rows[0].n)], [final, final, N], 'store: charged once each, journal = balance');
    const view = await host.localAccount(orgId);
    t.same(view && [view.balance, view.openHolds], [final, 0], 'the actor ends exact, no hold left');
  });
}
