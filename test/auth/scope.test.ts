// Scope against the demo catalog: each axis, their combination, and alias
// resolution (the caller resolves the name to its catalog model first; the
// scope then judges the model and its vendor, whatever name was used).
import t from 'tap';
import { scopeAllows } from '../../src/auth/scope.js';
import type { ApiKey, KeyScope } from '../../src/auth/types.js';
import { loadCatalog } from '../../src/catalog/load.js';
import { seedDemoCatalog } from '../../src/catalog/seed.js';
import type { CatalogSnapshot } from '../../src/catalog/snapshot.js';
import { migrate } from '../../src/store/migrate.js';
import { createPool } from '../../src/store/pool.js';
import { testDatabase } from '../helpers/services.js';

const NORTHWIND = '10000000-0000-4000-8000-000000000001';
const AURORA = '10000000-0000-4000-8000-000000000002';
const SWIFT = '20000000-0000-4000-8000-000000000001'; // northwind, text, aliases swift / swift-latest
const EMBED = '20000000-0000-4000-8000-000000000004'; // northwind, embeddings
const CANVAS = '20000000-0000-4000-8000-000000000005'; // aurora, images

const key = (scope: KeyScope | null): ApiKey => ({
  id: 'k', orgId: 'o', name: 'n', prefix: 'abcdef', last4: 'wxyz', version: 1, scope, binding: 'organization', funding: 'balance', expiresAt: null, quotaPerMinute: null,
});

let snap: CatalogSnapshot;

t.before(async () => {
  const url = await testDatabase(t);
  if (url === null) return;
  const pool = createPool(url, 2);
  await migrate(pool);
  await seedDemoCatalog(pool);
  snap = await loadCatalog(pool, null);
  await pool.end();
});

const model = (name: string) => {
  const m = snap.byName.get(name);
  if (m === undefined) throw new Error(`no model ${name} in the demo catalog`);
  return m;
};

t.test('unrestricted: everything', async (t) => {
  for (const [name, m] of snap.byName) for (const mod of m.modalityCodes) t.ok(scopeAllows(key(null), m, mod), `${name} ${mod}`);
});

t.test('modality_codes axis', async (t) => {
  const k = key({ modality_codes: ['embeddings'] });
  t.ok(scopeAllows(k, model('nw-embed-1'), 'embeddings'));
  t.notOk(scopeAllows(k, model('nw-swift-1'), 'text_generation'));
  t.notOk(scopeAllows(k, model('au-canvas-1'), 'image_generation'));
});

t.test('model_ids axis', async (t) => {
  const k = key({ model_ids: [SWIFT, CANVAS] });
  t.ok(scopeAllows(k, model('nw-swift-1'), 'text_generation'));
  t.ok(scopeAllows(k, model('au-canvas-1'), 'image_generation'));
  t.notOk(scopeAllows(k, model('nw-embed-1'), 'embeddings'), 'same vendor, other model');
  t.notOk(scopeAllows(k, model('au-atlas-2'), 'text_generation'));
});

t.test('vendor_ids axis (the catalog vendor behind the model)', async (t) => {
  const k = key({ vendor_ids: [AURORA] });
  t.ok(scopeAllows(k, model('au-atlas-2'), 'text_generation'));
  t.ok(scopeAllows(k, model('au-canvas-1'), 'image_generation'));
  t.notOk(scopeAllows(k, model('nw-swift-1'), 'text_generation'));
  t.notOk(scopeAllows(k, model('ks-quill-1'), 'text_generation'));
});

t.test('axes combine: every listed axis must allow', async (t) => {
  const k = key({ vendor_ids: [NORTHWIND], modality_codes: ['text_generation'] });
  t.ok(scopeAllows(k, model('nw-swift-1'), 'text_generation'));
  t.notOk(scopeAllows(k, model('nw-embed-1'), 'embeddings'), 'right vendor, wrong modality');
  t.notOk(scopeAllows(k, model('au-atlas-2'), 'text_generation'), 'right modality, wrong vendor');
  const narrow = key({ model_ids: [EMBED], modality_codes: ['text_generation'] });
  t.notOk(scopeAllows(narrow, model('nw-embed-1'), 'embeddings'), 'an empty intersection allows nothing');
});

t.test('aliases resolve to the model the scope names', async (t) => {
  const k = key({ model_ids: [SWIFT] });
  for (const name of ['nw-swift-1', 'swift', 'swift-latest']) {
    t.equal(model(name).modelId, SWIFT, `${name} is the model ${SWIFT}`);
    t.ok(scopeAllows(k, model(name), 'text_generation'), `${name} allowed`);
  }
  t.notOk(scopeAllows(k, model('atlas'), 'text_generation'), 'an alias of another model is refused');
  t.notOk(scopeAllows(key({ vendor_ids: [AURORA] }), model('swift'), 'text_generation'), 'the alias carries its model\'s vendor');
});
