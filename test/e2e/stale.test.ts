// The database goes away while the gateway runs: the list turns stale with
// no capabilities, the gateway keeps answering, and it recovers by itself.
import t from 'tap';
import { startGateway, waitReady } from '../helpers/gateway.js';
import { testDatabase } from '../helpers/services.js';
import { proxiedDatabase } from '../helpers/tcp-proxy.js';

async function models(url: string): Promise<any> {
  const res = await fetch(`${url}/v1/models`);
  if (res.status !== 200) throw new Error(`the list answered ${res.status}`);
  return res.json();
}

async function until(pred: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await pred()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

const db = await testDatabase(t);
if (db !== null) {
  const { proxy, url } = await proxiedDatabase(db);
  const gw = await startGateway({ env: { DATABASE_URL: url, CATALOG_REFRESH_MS: '200' } });
  t.teardown(async () => {
    await gw.stop();
    await proxy.close();
  });

  t.test('stale while the store is away, recovered when it returns', async (t) => {
  // Ready first, as a load balancer would wait: on a loaded machine one of the
  // 200 ms refreshes may time out on its connection and mark the list stale
  // for a moment, which is the behaviour under test, not a failure of it.
  await waitReady(gw);
  t.ok(await until(async () => (await models(gw.url)).stale === false, 15_000), 'fresh before the cut');
  const before: any = await models(gw.url);
  t.equal(before.stale, false);
  t.ok(before.data.length > 0);

  await proxy.cut();
  t.ok(await until(async () => (await models(gw.url)).stale === true, 10_000), 'turns stale after the store is cut');
  const stale: any = await models(gw.url);
  t.same(stale.data, [], 'no model capability advertised while stale');
  t.equal(stale.catalog_revision, before.catalog_revision, 'revision diagnostics kept');
  t.equal(stale.loaded_at, before.loaded_at);
  t.equal((await fetch(`${gw.url}/readyz`)).status, 503, 'not ready while the store is unreachable');
  t.equal((await fetch(`${gw.url}/healthz`)).status, 200, 'alive all along');

  await proxy.restore();
  t.ok(await until(async () => (await models(gw.url)).stale === false, 15_000), 'recovers by itself');
  const after: any = await models(gw.url);
  t.same(after.data.map((m: any) => m.id), before.data.map((m: any) => m.id));
  t.equal((await fetch(`${gw.url}/readyz`)).status, 200);
  });
}
