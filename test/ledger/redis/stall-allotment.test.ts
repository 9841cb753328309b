// Issue 39, fault 2: after Redis was stopped (SIGSTOP) for 6 s, an allotment
// stayed held while its worker lived. A reservation that also asks for an
// allotment is sent while Redis is stalled; the worker stops waiting (its
// command times out, the caller answers 503 and releases the call, naming only
// the call); Redis resumes while the reservation's deadline has not passed,
// so the shard's owner applies it and grants the allotment, whose answer
// nobody reads. Nothing retired that allotment: its money stayed held (the
// console showed `held` with no open hold), and a call for what the account
// had free was refused 402 after the recall went unanswered.
//
// In one process, on a redis-server of this test's own (SIGSTOP/SIGCONT; the
// shared one is never touched): one host, one worker client with allotments,
// reservations asked for in waves over the stall's last seconds so that some
// reach the owner before their deadline. Then: no allotment open for long
// once Redis is back, no false 402, no hold left, the books exact. Also
// measured: the first account answer after Redis returned.
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
import { checkBooks } from '../../reliability/lib/books.js';
import { usage } from '../helpers.js';
import { tempDir } from '../../helpers/gateway.js';

/** The workers' books' files (a primary's data_dir/books in a real instance). */
const BOOKS_DIR = tempDir('tollgate-books-');

// The gateway's default lease (billing.hold_lease_ms): longer than the stall, so the worker's holds outlive it.
const SETTINGS = { flushMs: 100, journalMaxLagMs: 1000, holdLeaseMs: 15_000, holdMaxMs: 3_600_000, quotaPerSecond: 100_000, quotaPerMinute: 10_000_000 };
const bus: ChangeBus = { publish: async () => {}, subscribe: () => {}, close: async () => {} };
const STALL_MS = 6000;
/** When, into the stall, each wave of reservations is sent: their deadlines (+3 s) fall 0–1 s after Redis resumes. */
const WAVES_MS = Array.from({ length: 11 }, (_, i) => 3000 + i * 100);
const ORGS_PER_WAVE = 6;
const AMOUNT = 59;
const BALANCE = 500_000;

const redis = await ownRedis(t);
const db = redis === null ? null : await testDatabase(t);
if (redis !== null && db !== null) {
  t.test('reservations asking for allotments in flight through a 6 s Redis stall: no allotment stranded, no false 402', async (t) => {
    const logger = createLogger(process.env.TEST_LOG ?? 'silent', 'test');
    const pool = createPool(db, 4);
    t.teardown(() => pool.end());
    await migrate(pool);
    const keys = new RedisKeys(redisPrefix(db));
    const host = new RedisLedgerHost({ url: redis.url, keys, instanceId: `stall-allot-${process.pid}`, pool, settings: SETTINGS, bus, logger, booksDir: BOOKS_DIR });
    const client = new RedisLedgerClient({ url: redis.url, keys, owner: `stall-allot-${process.pid}/1`, ...SETTINGS, allotmentCalls: 32, databaseUrl: db, logger, booksDir: BOOKS_DIR });
    t.teardown(async () => {
      redis.resume();
      await client.close();
      await host.close();
    });
    t.ok(await host.ready(15_000), 'the host serves every shard');

    const orgs = await Promise.all(
      Array.from({ length: WAVES_MS.length * ORGS_PER_WAVE + 1 }, async (_, i) => {
        const id = randomUUID();
        await createOrganization(pool, id, `Stall ${i}`, BALANCE);
        return id;
      }),
    );
    const consoleOrg = orgs.pop()!;
    // One call settled before the stall, so the console org is known to its owner.
    const warm = { requestId: `warm_${randomUUID()}`, orgId: consoleOrg, funding: 'balance' as const, amount: AMOUNT };
    t.ok((await client.reserve(warm)).ok, 'a call before the stall');
    await client.settle({ usage: { ...usage(warm.requestId, 40, AMOUNT, 'balance', consoleOrg), finishedAt: Date.now() } });
    await client.delivered();
    let charged = 40;

    // Each organization's first reservation asks for an allotment (allotment_calls 32). As the gateway does, a
    // reservation that fails is answered 503 and its call released.
    const outcomes: string[] = [];
    const reserveOrRelease = async (orgId: string): Promise<void> => {
      const req = { requestId: `stalled_${randomUUID()}`, orgId, funding: 'balance' as const, amount: AMOUNT };
      try {
        const r = await client.reserve(req);
        outcomes.push(r.ok ? 'ok' : r.code);
        if (r.ok) {
          await client.settle({ usage: { ...usage(req.requestId, 30, AMOUNT, 'balance', orgId), finishedAt: Date.now() } });
          charged += 30;
        }
      } catch {
        outcomes.push('503');
        await client.release({ requestId: req.requestId, orgId });
      }
    };

    const pausedAt = Date.now();
    redis.pause();
    const waves = WAVES_MS.map(async (at, w) => {
      await sleep(pausedAt + at - Date.now());
      await Promise.all(orgs.slice(w * ORGS_PER_WAVE, (w + 1) * ORGS_PER_WAVE).map(reserveOrRelease));
    });
    await sleep(pausedAt + STALL_MS - Date.now());
    redis.resume();
    const resumedAt = Date.now();

    // The first account answer after Redis returned (README: service resumes within about a second).
    let firstAnswerMs = -1;
    const consoleRead = (async () => {
      while (Date.now() - resumedAt < 15_000) {
        const view = await client.account(consoleOrg).catch(() => null);
        if (view !== null) return (firstAnswerMs = Date.now() - resumedAt);
        await sleep(50);
      }
    })();
    await Promise.all(waves);
    t.comment(`reservations sent during the stall: ${JSON.stringify(outcomes.reduce<Record<string, number>>((m, o) => ((m[o] = (m[o] ?? 0) + 1), m), {}))}`);

    // Allotments open on the owner, sampled without reading an account (an account view recalls them).
    let maxOpen = 0;
    let openAt5s = -1;
    const changes: string[] = [];
    let last = -1;
    while (Date.now() - resumedAt < 5000) {
      const now = host.stats().allotments;
      if (now !== last) changes.push(`${Date.now() - resumedAt} ms: ${now}`);
      last = now;
      maxOpen = Math.max(maxOpen, now);
      await sleep(20);
    }
    t.comment(`open allotments after the resume: ${changes.join(', ')}`);
    openAt5s = host.stats().allotments;
    await consoleRead;
    t.comment(`allotments open after Redis resumed: at most ${maxOpen}; 5 s after: ${openAt5s}; first account answer ${firstAnswerMs} ms after Redis resumed`);
    t.ok(firstAnswerMs >= 0, `the console answers again (${firstAnswerMs} ms after Redis resumed)`);
    t.equal(openAt5s, 0, 'no allotment is open 5 s after Redis resumed (the worker holds none it knows of)');
    const held = (await Promise.all(orgs.map((o) => host.localAccount(o)))).reduce((s, v) => s + (v?.heldBalance ?? 0), 0);
    t.equal(held, 0, 'nothing held once the worker has no call in progress');

    // No false 402: a call for exactly what each account has free is admitted.
    const refusals: string[] = [];
    await Promise.all(
      orgs.map(async (orgId) => {
        const view = await host.localAccount(orgId);
        const free = (view?.balance ?? 0) - (view?.heldBalance ?? 0);
        const req = { requestId: `full_${randomUUID()}`, orgId, funding: 'balance' as const, amount: free };
        const r = await client.reserve(req);
        if (!r.ok) refusals.push(`${orgId.slice(0, 8)}: ${r.code} for ${free} µ free`);
        else await client.release({ requestId: req.requestId, orgId });
      }),
    );
    t.same(refusals, [], 'a call for all the free balance is admitted in every organization');

    await client.delivered();
    await sleep(1500);
    const views = await Promise.all([...orgs, consoleOrg].map((o) => host.localAccount(o)));
    t.equal(views.reduce((s, v) => s + (v?.openHolds ?? 0), 0), 0, 'no hold left');
    const books = await checkBooks(db);
    t.same(books.violations, [], 'books exact');
    t.equal(books.chargedMicros, charged, `charged exactly what the calls settled (${charged} µ)`);
  });
}
