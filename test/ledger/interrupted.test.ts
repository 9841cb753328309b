// Issue 17: output delivered before a kill -9 is billed. A stream long enough
// to report progress is cut by killing the process that serves it — a worker
// (embedded ledger), a whole instance (Redis ledger, two instances) — and the
// hold is settled on the last progress: an 'interrupted' usage row with the
// delivered amount, the balance moved by exactly that, no hold left.
import t, { type Test } from 'tap';
import { micros } from '../helpers/money.js';
import { organization, provision, usageRows } from '../helpers/provision.js';
import { startGateway, type Gateway } from '../helpers/gateway.js';
import { testDatabase } from '../helpers/services.js';
import { workerPids } from '../helpers/workers.js';
import { scrape } from './scrape.js';
import { eventually, killInstance, sharedRedis, sleep, startInstances, waitForSpread, redisFor } from '../e2e/scale-out-helpers.js';

const LEASE_MS = 1000;
const CREDITS = '100.00';

/** Starts a slow stream (about 10 s) and reads it for `readMs`; answers how many bytes arrived. */
async function partialStream(base: string, key: string, readMs: number): Promise<{ bytes: number; cancel: () => void }> {
  const ac = new AbortController();
  const res = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'nw-swift-1', stream: true, max_tokens: 400, messages: [{ role: 'user', content: 'long [sim:words=200] [sim:delay_ms=50]' }] }),
    signal: ac.signal,
  });
  if (res.status !== 200) throw new Error(`stream answered ${res.status}: ${await res.text()}`);
  const reader = res.body!.getReader();
  let bytes = 0;
  const until = Date.now() + readMs;
  while (Date.now() < until) {
    const { value, done } = await reader.read();
    if (done) break;
    bytes += value.byteLength;
  }
  return { bytes, cancel: () => ac.abort() };
}

async function checkBilled(t: Test, base: string, orgId: string, waitMs: number): Promise<void> {
  let rows: any[] = [];
  const took = await eventually('an interrupted usage row', async () => (rows = await usageRows(base, orgId)).some((r) => r.outcome === 'interrupted'), waitMs);
  t.pass(`usage row written ${took} ms after the kill`);
  t.equal(rows.length, 1, 'one usage row');
  const row = rows[0];
  const charged = micros(row.charged);
  t.ok(charged > 0, `the delivered output is charged (${row.charged}, ${row.output_tokens} output tokens)`);
  t.ok(charged <= micros(row.reserved), 'at most the hold');
  const org = await organization(base, orgId);
  t.equal(micros(org.balance), micros(CREDITS) - charged, 'the balance moved by exactly that');
  t.equal(org.held, '0.00', 'no hold left');
}

t.test('embedded: kill -9 of the worker mid-stream', async (t) => {
  const gw: Gateway = await startGateway({ env: { ADMIN_TOKEN: 'test-admin-token-0123456789abcdef', HOLD_LEASE_MS: String(LEASE_MS) }, workers: 1 });
  t.teardown(() => gw.stop());
  const { key, orgId } = await provision(gw.url, { balance: CREDITS });
  const stream = await partialStream(gw.url, key, 2500);
  t.ok(stream.bytes > 0, `${stream.bytes} bytes delivered before the kill`);
  // The primary's children include the embedded PostgreSQL: only the worker (it logged the call) is killed.
  const workers = new Set(gw.logs.filter((l) => l.role === 'worker').map((l) => l.pid as number));
  for (const pid of workerPids(gw.proc.pid!).filter((p) => workers.has(p))) process.kill(pid, 'SIGKILL');
  stream.cancel();
  await gw.waitForLog((l) => l.msg === 'worker died; starting a replacement');
  await checkBilled(t, gw.url, orgId, LEASE_MS * 4 + 10_000);
});

t.test('Redis: kill -9 of the instance serving the stream', async (t) => {
  const redisUrl = await sharedRedis(t);
  if (redisUrl === null) return;
  const db = await testDatabase(t);
  if (db === null) return;
  const gateways = await startInstances(t, 2, { DATABASE_URL: db, REDIS_URL: redisUrl, HOLD_LEASE_MS: String(LEASE_MS) });
  await waitForSpread(redisFor(t, redisUrl), db, gateways);
  const { key, orgId } = await provision(gateways[1].url, { balance: CREDITS });
  await eventually('the key reaches the first instance', async () => (await fetch(`${gateways[0].url}/v1/key`, { headers: { authorization: `Bearer ${key}` } })).status === 200);
  const stream = await partialStream(gateways[0].url, key, 2500);
  t.ok(stream.bytes > 0, `${stream.bytes} bytes delivered before the kill`);
  killInstance(gateways[0]);
  stream.cancel();
  await sleep(100);
  await checkBilled(t, gateways[1].url, orgId, LEASE_MS * 4 + 15_000);
  const m = await scrape(gateways[1].opsUrl);
  t.equal(m.sum('tollgate_ledger_shards_owned'), 16, 'the survivor owns every shard');
  t.ok(m.sum('tollgate_ledger_shard_takeovers_total') >= 1, `takeovers counted (${m.sum('tollgate_ledger_shard_takeovers_total')})`);
  t.equal(m.sum('tollgate_ledger_progress_settlements_total'), 1, 'the settlement on progress counted');
});
