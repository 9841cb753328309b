// `tollgate catalog apply`: an operator adds a vendor, a supplier and a model
// from a file; a running gateway serves it after the published revision.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { startSimulator } from '../../src/simulator/index.js';
import { tollgate } from '../console/keys-helpers.js';
import { startGateway } from '../helpers/gateway.js';
import { ADMIN_TOKEN, provision, usageRows } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';

const db = await testDatabase(t);
if (db !== null) {
  const sim = await startSimulator({ instances: ['alpha', 'beta', 'gamma', 'acme'] });
  const gw = await startGateway({ env: { DATABASE_URL: db, SIMULATOR_URL: sim.url, ADMIN_TOKEN, CATALOG_REFRESH_MS: '200' } });
  t.teardown(async () => {
    await gw.stop();
    await sim.close();
  });
  const dir = t.testdir({});
  const file = (name: string, content: unknown): string => {
    const path = join(dir, name);
    writeFileSync(path, JSON.stringify(content));
    return path;
  };
  const model = (price: number) => ({
    vendor: 'acme',
    canonical_name: 'acme-chat-1',
    aliases: ['acme'],
    display_name_en: 'Acme Chat 1',
    display_name_ru: 'Акме Чат 1',
    description_en: 'A model an operator added.',
    description_ru: 'Модель, добавленная оператором.',
    banner_seed: 9,
    modality_codes: ['text_generation'],
    capabilities: [{ protocol_code: 'chat_completions', modality_code: 'text_generation', streaming_status: 'enabled' }],
    routes: [{ supplier: 'acme-direct', protocol_code: 'chat_completions', upstream_model: 'acme-upstream-name' }],
    price: { input_micros_per_mtok: price, output_micros_per_mtok: price },
  });
  const catalog = (price: number) => ({
    vendors: [{ code: 'acme', display_name_en: 'Acme', display_name_ru: 'Акме' }],
    suppliers: [{ name: 'acme-direct', wire_protocol: 'openai-compatible', base_url: `${sim.url}/acme/v1`, credential_env: 'TOLLGATE_SUPPLIER_ACME', protocols: ['chat_completions'] }],
    models: [model(price)],
  });
  const listed = async (): Promise<any> => (await fetch(`${gw.url}/v1/models`)).json();
  const until = async (pred: (l: any) => boolean): Promise<any> => {
    for (let i = 0; i < 50; i++) {
      const l = await listed();
      if (pred(l)) return l;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error('the gateway did not load the new revision');
  };

  t.test('apply: new vendor, supplier and model, served after the new revision', async (t) => {
    const r = await tollgate(['catalog', 'apply', file('acme.json', catalog(1000000))], { DATABASE_URL: db });
    t.equal(r.code, 0, r.stderr);
    t.match(r.stdout, /Published catalog revision 2/);
    const list = await until((l) => l.catalog_revision === 2);
    const acme = list.data.find((m: any) => m.id === 'acme-chat-1');
    t.ok(acme, 'listed');
    t.same(acme.protocol_codes, ['chat_completions']);
    t.equal(acme.vendor.code, 'acme');
    t.equal(acme.supplier_count, 1);

    const { key, orgId } = await provision(gw.url);
    const before = sim.requestCount('acme');
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'acme', messages: [{ role: 'user', content: 'hi [sim:words=2]' }] }),
    });
    t.equal(res.status, 200);
    t.equal(((await res.json()) as any).model, 'acme', 'alias echoed');
    t.equal(sim.requestCount('acme') - before, 1, 'routed to the new supplier');
    const rows = await usageRows(gw.url, orgId);
    t.equal(rows[0].supplier, 'acme-direct');
    t.equal(rows[0].model_id, acme.model_id);
  });

  t.test('applying again updates in place: same model_id, new price', async (t) => {
    const first = (await listed()).data.find((m: any) => m.id === 'acme-chat-1');
    const r = await tollgate(['catalog', 'apply', file('acme2.json', catalog(2000000))], { DATABASE_URL: db });
    t.equal(r.code, 0, r.stderr);
    const list = await until((l) => l.catalog_revision === 3);
    t.equal(list.data.find((m: any) => m.id === 'acme-chat-1').model_id, first.model_id, 'model_id is stable');
    const shown = await tollgate(['catalog', 'show', '--json'], { DATABASE_URL: db });
    const out = JSON.parse(shown.stdout);
    t.equal(out.revision, 3);
    t.ok(out.routes.some((x: any) => x.model === 'acme-chat-1' && x.supplier === 'acme-direct'));
  });

  t.test('a bad file is refused whole, with the reason, and publishes nothing', async (t) => {
    const bad = catalog(1);
    bad.models[0].routes[0].protocol_code = 'embeddings';
    const r = await tollgate(['catalog', 'apply', file('bad.json', bad)], { DATABASE_URL: db });
    t.not(r.code, 0);
    t.match(r.stderr, /supplier acme-direct does not serve embeddings/);
    const shape = await tollgate(['catalog', 'apply', file('shape.json', { models: [{ canonical_name: 'x' }] })], { DATABASE_URL: db });
    t.not(shape.code, 0);
    t.match(shape.stderr, /catalog file: \/models\/0 must have required property/);
    t.equal((await listed()).catalog_revision, 3, 'no revision published');
  });

  t.test('a price beyond the documented maximum is refused: no bounded call may price past 2^53 micros', async (t) => {
    const r = await tollgate(['catalog', 'apply', file('dear.json', catalog(1_000_000_000_001))], { DATABASE_URL: db });
    t.not(r.code, 0);
    t.match(r.stderr, /input_micros_per_mtok must be <= 1000000000000/);
    t.equal((await listed()).catalog_revision, 3, 'no revision published');
  });
}
