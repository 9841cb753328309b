// Revocation reaches every cluster worker within one second: through the
// console; written straight to the store by a writer that announces nothing
// (the store's own notice, migration 011, since the workers' timed poll is
// then only a 2 s safety net); and while the workers' LISTEN connections are
// down (their poll's fast pace, and a catch-up once they listen again).
import t, { type Test } from 'tap';
import { KeyService } from '../../src/console/key-service.js';
import { createPool, type Pool } from '../../src/store/pool.js';
import { startGateway, type Gateway } from '../helpers/gateway.js';
import { testDatabase } from '../helpers/services.js';
import { ADMIN, ADMIN_TOKEN, bearer, call, createKey, createOrg, sleep } from './keys-helpers.js';

let gw: Gateway;
let orgId: string;
let pool: Pool;

t.before(async () => {
  const url = await testDatabase(t);
  if (url === null) return;
  gw = await startGateway({ env: { DATABASE_URL: url, ADMIN_TOKEN }, workers: 2 });
  orgId = await createOrg(url);
  pool = createPool(url, 2);
});
t.teardown(async () => {
  await pool?.end();
  await gw?.stop();
});

interface Seen {
  at: number;
  status: number;
  rid: string;
}

/** Requests on fresh connections until both workers answered 200 (each then holds the key warm). */
async function warmOnBothWorkers(secret: string): Promise<Set<number>> {
  const pids = new Set<number>();
  for (let i = 0; i < 400 && pids.size < 2; i++) {
    const r = await call(gw.url, 'GET', '/v1/key', bearer(secret));
    if (r.status !== 200) continue;
    const line = await gw.waitForLog((l) => l.msg === 'request' && l.rid === r.headers['x-request-id']);
    pids.add(line.pid);
  }
  if (pids.size < 2) throw new Error('requests never reached both workers');
  return pids;
}

/** From `start`, requests on fresh connections for `forMs`; each with when it was sent and what came back. */
async function hammer(secret: string, start: number, forMs: number): Promise<Seen[]> {
  const seen: Seen[] = [];
  const lanes = Array.from({ length: 4 }, async () => {
    while (performance.now() - start < forMs) {
      const at = performance.now() - start;
      const r = await call(gw.url, 'GET', '/v1/key', bearer(secret));
      seen.push({ at, status: r.status, rid: r.headers['x-request-id'] });
    }
  });
  await Promise.all(lanes);
  return seen;
}

async function judge(t: Test, label: string, seen: Seen[], workers: Set<number>): Promise<void> {
  const byWorker = new Map<number, Seen[]>();
  for (const s of seen) {
    const line = await gw.waitForLog((l) => l.msg === 'request' && l.rid === s.rid);
    const list = byWorker.get(line.pid) ?? [];
    list.push(s);
    byWorker.set(line.pid, list);
  }
  t.same(new Set(byWorker.keys()), workers, `${label}: both workers answered during the test`);
  for (const [pid, list] of byWorker) {
    const lastOk = Math.max(-1, ...list.filter((s) => s.status === 200).map((s) => s.at));
    const afterSecond = list.filter((s) => s.at >= 1000);
    t.ok(lastOk < 1000, `${label}: worker ${pid} last accepted the key ${lastOk < 0 ? 'never' : `${lastOk.toFixed(0)} ms`} after the revocation began`);
    t.ok(afterSecond.length > 0 && afterSecond.every((s) => s.status === 401), `${label}: worker ${pid} refused all ${afterSecond.length} requests after 1 s`);
    t.comment(`${label}: worker ${pid} refused from ${(list.find((s) => s.status === 401)?.at ?? NaN).toFixed(0)} ms`);
  }
}

t.test('console revocation (bus) reaches both workers within 1 s', async (t) => {
  const { id, secret } = await createKey(gw, orgId, { name: 'revoke via console' });
  const workers = await warmOnBothWorkers(secret);
  const start = performance.now();
  const revoking = call(gw.url, 'POST', `/console/v1/keys/${id}/revoke`, ADMIN);
  const seen = await hammer(secret, start, 1500);
  t.equal((await revoking).status, 200);
  await judge(t, 'console', seen, workers);
});

t.test('a revocation whose writer announces nothing reaches both workers within 1 s: the store announces it', async (t) => {
  // Three times: with no notice, the safety poll (every 2 s) would miss the second in about half of them.
  for (let i = 0; i < 3; i++) {
    const { id, secret } = await createKey(gw, orgId, { name: `revoke without a bus ${i}` });
    const workers = await warmOnBothWorkers(secret);
    const start = performance.now();
    const revoking = new KeyService(pool, null).revoke(id);
    const seen = await hammer(secret, start, 1500);
    t.equal((await revoking).revoked_at !== null, true);
    await judge(t, `no bus ${i}`, seen, workers);
  }
  await sleep(10);
});

t.test('a revocation while the workers cannot hear notices reaches both workers within 1 s', async (t) => {
  const { id, secret } = await createKey(gw, orgId, { name: 'revoke while deaf' });
  const workers = await warmOnBothWorkers(secret);
  // Every listening connection of the gateway on this database cut (the workers' and the primary's): they reconnect after 1 s.
  const cut = await pool.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN tollgate_changes'`);
  t.ok(cut.rowCount! >= 2, `${cut.rowCount} listening connections cut`);
  await sleep(50);
  const start = performance.now();
  const revoking = new KeyService(pool, null).revoke(id);
  const seen = await hammer(secret, start, 1500);
  t.equal((await revoking).revoked_at !== null, true);
  await judge(t, 'deaf', seen, workers);
  // They listen again: a key created now works on both workers at once, and its revocation reaches them by notice.
  await sleep(1500);
  const again = await createKey(gw, orgId, { name: 'revoke after the reconnect' });
  const workersAgain = await warmOnBothWorkers(again.secret);
  const start2 = performance.now();
  const revoking2 = new KeyService(pool, null).revoke(again.id);
  const seen2 = await hammer(again.secret, start2, 1500);
  t.equal((await revoking2).revoked_at !== null, true);
  await judge(t, 'listening again', seen2, workersAgain);
});

t.test('a key created or revoked through the console works, or is refused, on every worker the moment the console answers', async (t) => {
  if (gw === undefined) return;
  const pids = new Set<number>();
  let refusedAfterCreate = 0;
  let servedAfterRevoke = 0;
  for (let round = 0; round < 10; round++) {
    const key = await createKey(gw, orgId, { name: `at once ${round}` });
    // Fresh connections at once: the kernel spreads them over both workers.
    const used = await Promise.all(Array.from({ length: 6 }, () => call(gw.url, 'GET', '/v1/key', bearer(key.secret))));
    refusedAfterCreate += used.filter((r) => r.status !== 200).length;
    for (const r of used) {
      const line = await gw.waitForLog((l) => l.msg === 'request' && l.rid === r.headers['x-request-id']);
      pids.add(line.pid as number);
    }
    const revoked = await call(gw.url, 'POST', `/console/v1/keys/${key.id}/revoke`, ADMIN);
    t.equal(revoked.status, 200);
    const after = await Promise.all(Array.from({ length: 6 }, () => call(gw.url, 'GET', '/v1/key', bearer(key.secret))));
    servedAfterRevoke += after.filter((r) => r.status !== 401).length;
  }
  t.equal(pids.size, 2, 'the calls reached both workers');
  t.equal(refusedAfterCreate, 0, 'no call right after the creation was refused');
  t.equal(servedAfterRevoke, 0, 'no call right after the revocation was served');
});
