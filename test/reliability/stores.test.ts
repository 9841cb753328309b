// Reliability, stores failing under traffic (issue 17), on private instances
// this file starts (never the shared 5432/6379): a redis-server of its own
// paused with SIGSTOP for longer than the hold lease under two instances, and
// a PostgreSQL server of its own (the embedded binaries) stopped and started
// again under a gateway. After each: every answer in its envelope, books
// exact, no hold left, the running ledger equal to the store.
import { spawn, type ChildProcess } from 'node:child_process';
import pg from 'pg';
import t, { type Test } from 'tap';
import { openEmbeddedStore, type EmbeddedStore } from '../../src/store/embedded.js';
import { startSimulator } from '../../src/simulator/index.js';
import { freePort, startGateway, tempDir, type Gateway } from '../helpers/gateway.js';
import { micros } from '../helpers/money.js';
import { ADMIN_TOKEN, organization, provision } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';
import { eventually, redisFor, startInstances, waitForSpread } from '../e2e/scale-out-helpers.js';
import { checkBooks, checkHolds } from './lib/books.js';
import { call, type CallResult } from './lib/load.js';

const LEASE_MS = 2000;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A redis-server of this file's own, which it may pause (SIGSTOP) and resume. */
async function privateRedis(t: Test): Promise<{ url: string; proc: ChildProcess } | null> {
  const port = await freePort();
  const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const failed = await new Promise<boolean>((resolve) => {
    proc.once('error', () => resolve(true));
    setTimeout(() => resolve(false), 300);
  });
  if (failed) {
    t.plan(0, 'skipped: redis-server could not be started; install it to run this test');
    return null;
  }
  t.teardown(() => {
    proc.kill('SIGCONT');
    proc.kill('SIGKILL');
  });
  return { url: `redis://127.0.0.1:${port}`, proc };
}

/** `callers` loops per gateway of small chat calls until stop(). */
function traffic(gateways: Gateway[], key: string, callers: number): { stop(): Promise<Array<CallResult & { startedAt: number }>> } {
  const results: Array<CallResult & { startedAt: number }> = [];
  let running = true;
  const loops = gateways.flatMap((gw) =>
    Array.from({ length: callers }, async (_, i) => {
      while (running) {
        const startedAt = Date.now();
        const r = await call(gw.url, key, i % 2 === 0 ? 'chat' : 'chat-stream', 'stores [sim:words=60] [sim:delay_ms=3]');
        results.push({ ...r, startedAt });
        if (r.outcome !== 'ok') await sleep(30);
      }
    }),
  );
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
      return results;
    },
  };
}

async function storeBalance(db: string, orgId: string): Promise<number> {
  const c = new pg.Client({ connectionString: db });
  await c.connect();
  try {
    return Number((await c.query('SELECT balance_micros::text AS b FROM organization_money WHERE id = $1', [orgId])).rows[0].b);
  } finally {
    await c.end();
  }
}

async function assertAfter(t: Test, name: string, url: string, db: string, results: CallResult[]): Promise<void> {
  const broken = results.filter((r) => r.outcome === 'broken');
  t.same(broken, [], `${name}: ${results.length} calls, every refusal in its envelope (${results.filter((r) => r.outcome === 'ok').length} answered, ${results.filter((r) => r.status === 503).length} refused 503)`);
  const holds = await checkHolds(url, db, LEASE_MS * 4 + 5000);
  t.equal(holds.leaked, 0, `${name}: holds leaked: ${holds.leaked}`);
  t.same(holds.violations, [], `${name}: the running ledger agrees with the store`);
  const books = await checkBooks(db);
  t.same(books.violations, [], `${name}: books exact (${books.usageRows} usage rows)`);
}

const drift: string[] = [];
/** How long the ledger may be ahead of the store by charges on their way to it: a flush (100 ms), its write, and a busy machine's margin. */
const MISMATCH_GRACE_MS = 500;

t.test('Redis paused with SIGSTOP for twice the hold lease under two instances', async (t) => {
  const redis = await privateRedis(t);
  const db = redis === null ? null : await testDatabase(t);
  if (redis === null || db === null) return;
  const sim = await startSimulator({ instances: ['alpha', 'beta', 'gamma'] });
  t.teardown(() => sim.close());
  const gateways = await startInstances(t, 2, { DATABASE_URL: db, REDIS_URL: redis.url, SIMULATOR_URL: sim.url, HOLD_LEASE_MS: String(LEASE_MS), QUOTA_PER_SECOND: '100000', QUOTA_PER_MINUTE: '10000000' });
  await waitForSpread(redisFor(t, redis.url), db, gateways);
  const { key, orgId } = await provision(gateways[0].url, { balance: '100.00' });
  await eventually('the key reaches both instances', async () => (await fetch(`${gateways[1].url}/v1/key`, { headers: { authorization: `Bearer ${key}` } })).status === 200);

  // The ledger's view through each instance's console, every 100 ms: it must never show less money than there is.
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      for (const gw of gateways) {
        const org = await organization(gw.url, orgId).catch(() => null);
        if (org === null) continue;
        const balance = micros(org.balance);
        const held = micros(org.held);
        if (balance < 0) drift.push(`a balance of ${balance} µ in the console while the store holds ${await storeBalance(db, orgId)} µ`);
        if (held > balance) drift.push(`open holds (${held} µ) above the balance (${balance} µ)`);
      }
      await sleep(100);
    }
  })();
  const load = traffic(gateways, key, 3);
  await sleep(1500);
  redis.proc.kill('SIGSTOP');
  await sleep(LEASE_MS * 2);
  redis.proc.kill('SIGCONT');
  const resumedAt = Date.now();
  // Traffic stops as Redis resumes: the ledger's view on each instance must equal the store (the
  // issue saw it off for 0.1–2.4 s), except for charges on their way to it. Settlements still land
  // for ~2.5 s after the resume (owners apply what waited in the streams at their next lease tick;
  // workers re-send what they sent in the last 2–4 s), and with flush_ms > 0 a charge applied in
  // memory reaches the store a flush (100 ms) and a write later, by design (docs/billing.md). A
  // difference counts as drift when it outlasts that: the same one seen for MISMATCH_GRACE_MS.
  // (A fixed 300 ms of quiet failed 2 of 3 fresh-clone CI runs on 2026-11-25: one or two charges
  // applied in memory 0.5–2.3 s after the resume, in the store ~100 ms later.) The actor-level
  // check with a 2 ms sampler is test/ledger/redis/stall.test.ts.
  const results = await load.stop();
  await sleep(300);
  const quietUntil = Date.now() + 2500;
  const since = new Map<number, { at: number; diff: number }>();
  while (Date.now() < quietUntil) {
    const store = await storeBalance(db, orgId);
    for (const [i, gw] of gateways.entries()) {
      const org = await organization(gw.url, orgId).catch(() => null);
      if (org === null) continue;
      const diff = micros(org.balance) - store;
      const seen = since.get(i);
      if (diff === 0) since.delete(i);
      else if (seen === undefined || seen.diff !== diff) since.set(i, { at: Date.now(), diff });
      else if (Date.now() - seen.at >= MISMATCH_GRACE_MS) {
        drift.push(`instance ${i}, ${Date.now() - resumedAt} ms after Redis resumed: the ledger says ${micros(org.balance)} µ, the store ${store} µ, for ${Date.now() - seen.at} ms`);
      }
    }
    await sleep(50);
  }
  await eventually('both instances serve again', async () => (await Promise.all(gateways.map((g) => call(g.url, key, 'chat', 'back [sim:words=2]')))).every((r) => r.outcome === 'ok'), 15_000);
  t.ok(true, `both instances served again ${Date.now() - resumedAt} ms after Redis resumed`);
  sampling = false;
  await sampler;
  const refusedForFunds = results.filter((r) => r.status === 402);
  if (refusedForFunds.length > 0) drift.push(`${refusedForFunds.length} calls refused 402 with 100.00 in the account`);
  const slowest = Math.max(...results.map((r) => r.ms));
  t.ok(slowest >= LEASE_MS, `the pause was felt: the slowest call took ${slowest.toFixed(0)} ms`);
  t.comment(`drift seen: ${drift.length === 0 ? 'none' : drift.slice(0, 5).join('; ')}`);
  await assertAfter(t, 'Redis paused', gateways[0].url, db, results);
});

t.test('the ledger’s view stays exact through a Redis stall of ≥ 3 s', async (t) => {
  t.same(drift, [], 'no drift seen by the sampler or the callers');
});

t.test('PostgreSQL stopped and started again under traffic', async (t) => {
  const dataDir = tempDir('tollgate-reliability-pg-');
  let store: EmbeddedStore = await openEmbeddedStore(dataDir, { maxConnections: 60 });
  t.teardown(() => store.close());
  const sim = await startSimulator({ instances: ['alpha', 'beta', 'gamma'] });
  t.teardown(() => sim.close());
  const gw = await startGateway({ workers: 1, env: { DATABASE_URL: store.url, SIMULATOR_URL: sim.url, ADMIN_TOKEN, HOLD_LEASE_MS: String(LEASE_MS), QUOTA_PER_SECOND: '100000', QUOTA_PER_MINUTE: '10000000' } });
  t.teardown(() => gw.stop());
  const { key } = await provision(gw.url, { balance: '100.00' });
  const load = traffic([gw], key, 4);
  await sleep(1000);
  await store.close();
  const downAt = Date.now();
  await sleep(2000);
  store = await openEmbeddedStore(dataDir, { maxConnections: 60 });
  t.comment(`PostgreSQL was down ${Date.now() - downAt} ms`);
  await sleep(3000);
  const results = await load.stop();
  t.equal(gw.proc.exitCode, null, 'the gateway is still running');
  t.ok(results.filter((r) => r.outcome === 'ok' && r.startedAt > Date.now() - 2000).length > 0, 'calls answered again after the restart');
  await assertAfter(t, 'PostgreSQL restarted', gw.url, store.url, results);
});
