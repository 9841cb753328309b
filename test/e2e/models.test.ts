// GET /v1/models against a real PostgreSQL: the published intersection, the
// REST envelope for unknown paths and methods, ETag, ops endpoints.
import t from 'tap';
import { startGateway } from '../helpers/gateway.js';
import { testDatabase } from '../helpers/services.js';

const db = await testDatabase(t);
if (db !== null) {
  const gw = await startGateway({ env: { DATABASE_URL: db }, workers: 2 });
  t.teardown(() => gw.stop());

  t.test('open, PublicModelCatalog shape, only published and routable models', async (t) => {
    const res = await fetch(`${gw.url}/v1/models`);
    t.equal(res.status, 200);
    t.match(res.headers.get('x-request-id'), /^req_[0-9a-f]{32}$/);
    const body: any = await res.json();
    t.equal(body.object, 'list');
    t.equal(body.stale, false);
    t.equal(body.catalog_revision, 1);
    t.ok(!Number.isNaN(Date.parse(body.loaded_at)));
    const ids = body.data.map((m: any) => m.id);
    t.same(ids, ['nw-swift-1', 'au-atlas-2', 'ks-quill-1', 'au-canvas-1', 'nw-embed-1'], 'showcase order, then by name');
    t.notOk(ids.includes('nw-legacy-0'), 'inactive model hidden');
    t.notOk(ids.includes('ks-draft-0'), 'model no supplier carries is hidden');

    const swift = body.data[0];
    t.equal(swift.object, 'model');
    t.equal(swift.id, swift.canonical_name, 'id is the canonical name');
    t.equal(swift.supplier_count, 2, 'two suppliers carry swift');
    t.same(swift.vendor, { code: 'northwind', display_name_en: 'Northwind AI', display_name_ru: 'Нордвинд ИИ', id: '10000000-0000-4000-8000-000000000001' });
    t.same(swift.protocol_codes, ['chat_completions', 'responses']);
    t.same(swift.modality_codes, ['text_generation']);
    for (const key of ['banner_seed', 'capabilities', 'description_en', 'description_ru', 'display_name_en', 'display_name_ru', 'model_id']) t.ok(key in swift, key);

    const atlas = body.data.find((m: any) => m.id === 'au-atlas-2');
    t.same(atlas.protocol_codes, ['chat_completions', 'responses'], 'declared native_messages has no route: not advertised');
    t.notOk(atlas.capabilities.some((c: any) => c.protocol_code === 'native_messages'));
    t.equal(atlas.supplier_count, 1);
    const embed = body.data.find((m: any) => m.id === 'nw-embed-1');
    t.same(embed.modality_codes, ['embeddings']);
    t.notOk('header_badge' in embed, 'optional members left out when unset');
  });

  t.test('ETag and If-None-Match → 304, whichever worker answers', async (t) => {
    const first = await fetch(`${gw.url}/v1/models`);
    const etag = first.headers.get('etag')!;
    t.ok(etag);
    // Fresh connections spread over both workers (SO_REUSEPORT): every one must know the same ETag.
    for (let i = 0; i < 10; i++) {
      const again = await fetch(`${gw.url}/v1/models`, { headers: { 'if-none-match': etag, connection: 'close' } });
      t.equal(again.status, 304);
      t.equal(await again.text(), '');
    }
  });

  t.test('unknown path → 404, wrong method → 405 with Allow, both in the REST envelope', async (t) => {
    const missing = await fetch(`${gw.url}/v1/nothing-here`);
    t.equal(missing.status, 404);
    const body: any = await missing.json();
    t.equal(body.error.code, 'not_found');
    t.equal(body.error.request_id, missing.headers.get('x-request-id'));
    t.equal(body.error.version, '2026-11-01');

    const wrong = await fetch(`${gw.url}/v1/models`, { method: 'DELETE' });
    t.equal(wrong.status, 405);
    t.equal(wrong.headers.get('allow'), 'GET');
    const wb: any = await wrong.json();
    t.equal(wb.error.code, 'method_not_allowed');
    t.equal(wb.error.request_id, wrong.headers.get('x-request-id'));
  });

  t.test('every response carries a fresh X-Request-Id', async (t) => {
    const ids = new Set<string>();
    for (let i = 0; i < 20; i++) ids.add((await fetch(`${gw.url}/healthz`)).headers.get('x-request-id')!);
    t.equal(ids.size, 20);
  });

  t.test('healthz, readyz, metrics', async (t) => {
    t.equal((await fetch(`${gw.url}/healthz`)).status, 200);
    t.equal((await fetch(`${gw.url}/readyz`)).status, 200);
    const text = await (await fetch(`${gw.url}/metrics`)).text();
    t.match(text, /tollgate_requests_total\{surface="models",status="200"\} \d+/);
    t.match(text, /tollgate_request_duration_seconds_bucket\{surface="models",le="\+Inf"\} \d+/);
    t.match(text, /tollgate_process_resident_memory_bytes\{role="primary",pid="\d+"\} \d+/);
    t.equal((text.match(/tollgate_process_resident_memory_bytes\{role="worker"/g) ?? []).length, 2, 'both workers report, whichever answered');
  });

  t.test('one JSON log line per finished request, with no secret or body', async (t) => {
    const res = await fetch(`${gw.url}/v1/models?x=1`);
    const rid = res.headers.get('x-request-id');
    const line = await gw.waitForLog((l) => l.rid === rid);
    t.equal(line.method, 'GET');
    t.equal(line.path, '/v1/models');
    t.equal(line.status, 200);
    t.type(line.ms, 'number');
  });
}
