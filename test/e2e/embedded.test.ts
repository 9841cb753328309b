// The embedded default: no DATABASE_URL, no REDIS_URL. PGlite under DATA_DIR,
// opened by the primary, served to the workers; a second start reuses it.
import { rmSync } from 'node:fs';
import t from 'tap';
import { startGateway, tempDir } from '../helpers/gateway.js';

const dataDir = tempDir('tollgate-embedded-');
t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));

t.test('first start creates the store, migrates, seeds, serves the demo catalog', async (t) => {
  const gw = await startGateway({ dataDir, workers: 2 });
  const listening = gw.logs.find((l) => l.msg === 'listening')!;
  t.equal(listening.store, 'embedded');
  t.ok(listening.migrations.length >= 2, 'migrations applied');
  t.equal(listening.seeded, true);
  const body: any = await (await fetch(`${gw.url}/v1/models`)).json();
  t.equal(body.catalog_revision, 1);
  t.ok(body.data.some((m: any) => m.id === 'nw-swift-1'));
  t.equal(await gw.stop(), 0, 'SIGTERM exits 0');
});

t.test('a second start reuses the data: nothing migrated or seeded again', async (t) => {
  const gw = await startGateway({ dataDir });
  const listening = gw.logs.find((l) => l.msg === 'listening')!;
  t.same(listening.migrations, []);
  t.equal(listening.seeded, false);
  const body: any = await (await fetch(`${gw.url}/v1/models`)).json();
  t.equal(body.catalog_revision, 1);
  t.equal(body.data.length, 5);
  t.equal(await gw.stop(), 0);
});

t.test('a second gateway on the same data directory is refused', async (t) => {
  const gw = await startGateway({ dataDir });
  await t.rejects(startGateway({ dataDir, timeoutMs: 20_000 }), /in use by process/);
  await gw.stop();
});
