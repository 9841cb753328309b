// A flood of 20,000 distinct, well-formed, unknown keys: every one refused in
// memory. Shown three ways: the gateway's key-store lookup counter does not
// move, PostgreSQL's own count of scans of the key-hash index does not move,
// and the worker's resident memory stays flat.
import t from 'tap';
import { Pool as HttpPool } from 'undici';
import pg from 'pg';
import { startGateway, waitReady, type Gateway } from '../helpers/gateway.js';
import { testDatabase } from '../helpers/services.js';
import { ADMIN_TOKEN, bearer, createKey, createOrg, randomKey, sleep } from '../console/keys-helpers.js';

const FLOOD = 20_000;
const WARMUP = 5_000;
const RSS_BUDGET_MB = 10;

let gw: Gateway;
let dbUrl: string;

t.before(async () => {
  const url = await testDatabase(t);
  if (url === null) return;
  dbUrl = url;
  gw = await startGateway({ env: { DATABASE_URL: url, ADMIN_TOKEN } });
});
t.teardown(() => gw?.stop());

async function metric(name: RegExp): Promise<number> {
  const text = await (await fetch(`${gw.opsUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => name.test(l));
  if (line === undefined) throw new Error(`no metric ${name}`);
  return Number(line.split(' ').pop());
}

/** Scans of the unique index on api_keys.key_hash, as PostgreSQL counts them (reported at most once a second). */
async function hashIndexScans(): Promise<number> {
  await sleep(1100);
  const c = new pg.Client({ connectionString: dbUrl });
  await c.connect();
  try {
    await c.query('SELECT pg_stat_clear_snapshot()');
    const { rows } = await c.query<{ n: string }>(
      "SELECT idx_scan AS n FROM pg_stat_user_indexes WHERE relname = 'api_keys' AND indexrelname = 'api_keys_key_hash_key'",
    );
    return Number(rows[0].n);
  } finally {
    await c.end();
  }
}

async function flood(count: number): Promise<Map<number, number>> {
  const http = new HttpPool(gw.url, { connections: 16, pipelining: 1 });
  const statuses = new Map<number, number>();
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < count) {
      next++;
      const r = await http.request({ path: '/v1/key', method: 'GET', headers: bearer(randomKey()) });
      await r.body.dump();
      statuses.set(r.statusCode, (statuses.get(r.statusCode) ?? 0) + 1);
    }
  };
  await Promise.all(Array.from({ length: 32 }, lane));
  await http.close();
  return statuses;
}

t.test(`${FLOOD} random well-formed keys: no store lookup, flat memory`, async (t) => {
  const orgId = await createOrg(dbUrl);
  const live = await createKey(gw, orgId, { name: 'a real key among the noise' });
  const rss = /^tollgate_process_resident_memory_bytes\{role="worker"/;

  // The worker's warm pool thread loads the tokenizer after listening (~70 MB): /readyz says when it has, so that
  // load is not taken for the flood's growth.
  await waitReady(gw);
  await flood(WARMUP); // JIT, connection and allocator warm-up before the baseline
  const lookupsBefore = await metric(/^tollgate_key_store_lookups_total /);
  const scansBefore = await hashIndexScans();
  const rssBefore = await metric(rss);

  const started = performance.now();
  const statuses = await flood(FLOOD);
  const seconds = (performance.now() - started) / 1000;

  const lookupsAfter = await metric(/^tollgate_key_store_lookups_total /);
  const scansAfter = await hashIndexScans();
  const rssAfter = await metric(rss);
  const growthMb = (rssAfter - rssBefore) / 1024 / 1024;

  t.same([...statuses], [[401, FLOOD]], `all ${FLOOD} refused with 401`);
  t.equal(lookupsAfter, lookupsBefore, 'the gateway read no key from the store');
  t.equal(scansAfter, scansBefore, 'PostgreSQL saw no lookup by key hash');
  t.ok(growthMb < RSS_BUDGET_MB, `worker RSS ${(rssBefore / 1048576).toFixed(1)} → ${(rssAfter / 1048576).toFixed(1)} MB (growth ${growthMb.toFixed(2)} MB < ${RSS_BUDGET_MB} MB)`);
  t.comment(`${FLOOD} refusals in ${seconds.toFixed(2)} s (${Math.round(FLOOD / seconds)}/s over 16 connections); RSS growth ${growthMb.toFixed(2)} MB`);

  const ok = await fetch(`${gw.url}/v1/key`, { headers: bearer(live.secret) });
  t.equal(ok.status, 200, 'the real key still works');
  t.equal(await metric(/^tollgate_key_store_lookups_total /), lookupsAfter + 1, 'and costs exactly one store read to warm');
  // A backend reports its counts once it idles, at most once a second and, on a busy machine, up to 10 s later.
  let scansNow = await hashIndexScans();
  for (let waited = 0; scansNow <= scansAfter && waited < 12; waited++) scansNow = await hashIndexScans();
  t.ok(scansNow > scansAfter, 'which PostgreSQL does count: the flood measurement is not blind');
});
