// issue 13 item 1: supplier wires declare the protocols they can speak.
// `catalog apply` refuses a supplier or a route its wire cannot carry, naming
// supplier, wire and protocol; a bad row written into the store by hand is
// left out of the snapshot (logged once per revision), so no request is ever
// sent to a URL ending in "/v1null".
import { Writable } from 'node:stream';
import pino from 'pino';
import t from 'tap';
import { applyCatalog, CatalogFileError } from '../../src/catalog/apply.js';
import { CredentialPolicy } from '../../src/catalog/credentials.js';
import { CatalogHolder } from '../../src/catalog/holder.js';
import { loadCatalog } from '../../src/catalog/load.js';
import { publishRevision } from '../../src/catalog/publish.js';
import { seedDemoCatalog } from '../../src/catalog/seed.js';
import { migrate } from '../../src/store/migrate.js';
import { createPool, inTransaction } from '../../src/store/pool.js';
import { testDatabase } from '../helpers/services.js';

const SWIFT = '20000000-0000-4000-8000-000000000001'; // the demo chat model
const BAD = '30000000-0000-4000-8000-0000000000ba';

const db = await testDatabase(t);
if (db !== null) {
  const pool = createPool(db, 4);
  t.teardown(() => pool.end());
  await migrate(pool);
  await seedDemoCatalog(pool);
  const policy = new CredentialPolicy([]);
  const apply = (file: object) => inTransaction(pool, (c) => applyCatalog(c, file, 'test', policy));
  const revision = async () => (await pool.query('SELECT max(revision)::int AS r FROM catalog_revisions')).rows[0].r as number;
  const supplier = (protocols: string[]) => ({ name: 'bad-anthropic', wire_protocol: 'anthropic-compatible', base_url: 'http://127.0.0.1:9/v1', protocols });

  t.test('item 1: apply refuses a supplier declaring a protocol its wire cannot speak, by name', async (t) => {
    const before = await revision();
    await t.rejects(apply({ suppliers: [supplier(['native_messages', 'chat_completions'])] }), {
      constructor: CatalogFileError,
      message: 'supplier bad-anthropic: wire anthropic-compatible cannot speak chat_completions',
    });
    t.equal((await pool.query("SELECT 1 FROM suppliers WHERE name = 'bad-anthropic'")).rowCount, 0, 'nothing stored');
    t.equal(await revision(), before, 'no revision published');
    // What the wire can speak is accepted.
    await apply({ suppliers: [supplier(['native_messages'])] });
  });

  t.test('item 1: apply refuses a route whose supplier wire cannot speak its protocol, by name', async (t) => {
    // A supplier row written by hand, as before wires were checked. Inside the test, not between two: a top-level
    // await there let the file's root test end before the next t.test() on a loaded machine (seen in a CI run).
    await pool.query(
      `INSERT INTO suppliers (id, name, wire_protocol, base_url, credential_env, protocols, active)
       VALUES ($1, 'hand-written', 'anthropic-compatible', 'http://127.0.0.1:9/v1', NULL, '{chat_completions}', true)`,
      [BAD],
    );
    const before = await revision();
    const model = {
      vendor: 'northwind', canonical_name: 'routed-badly', display_name_en: 'x', display_name_ru: 'x', description_en: 'x', description_ru: 'x',
      banner_seed: 1, modality_codes: ['text_generation'],
      capabilities: [{ protocol_code: 'chat_completions', modality_code: 'text_generation' }],
      routes: [{ supplier: 'hand-written', protocol_code: 'chat_completions', upstream_model: 'u' }],
    };
    await t.rejects(apply({ models: [model] }), {
      message: 'model routed-badly: route refused, supplier hand-written: wire anthropic-compatible cannot speak chat_completions',
    });
    t.equal(await revision(), before, 'no revision published');
  });

  t.test('item 1: a hand-written route its wire cannot speak is not routed, and is logged once', async (t) => {
    await inTransaction(pool, async (c) => {
      // Ahead of every good route, so it would be tried first.
      await c.query(`INSERT INTO routes (model_id, supplier_id, protocol_code, upstream_model, priority, active) VALUES ($1, $2, 'chat_completions', 'u', 0, true)`, [SWIFT, BAD]);
      await publishRevision(c, 'hand-written bad route');
    });
    const snap = await loadCatalog(pool, 'http://127.0.0.1:1');
    const routes = snap.byName.get('swift')!.protocols.get('chat_completions')!.routes;
    t.ok(routes.length > 0, 'the good routes still serve');
    t.notOk(routes.some((r) => r.supplier.name === 'hand-written'), 'the bad route is left out');
    t.same(snap.unspeakable, [`supplier hand-written: wire anthropic-compatible cannot speak chat_completions (route of model ${SWIFT} left out)`]);

    const lines: string[] = [];
    const sink = new Writable({ write: (chunk, _e, done) => (lines.push(String(chunk)), done()) });
    const holder = new CatalogHolder(pool, null, 60_000, pino({ level: 'info' }, sink));
    await holder.start();
    await holder.refreshNow(); // same revision: not logged again
    holder.stop();
    const logged = lines.filter((l) => l.includes('cannot speak'));
    t.equal(logged.length, 1, 'logged once');
    t.match(logged[0], /supplier hand-written: wire anthropic-compatible cannot speak chat_completions/);
  });
}
