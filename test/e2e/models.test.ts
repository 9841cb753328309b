// GET /v1/models against a real PostgreSQL: the published intersection, the
// REST envelope for unknown paths and methods, ETag, ops endpoints.
import t from 'tap';
import { startGateway, waitReady } from '../helpers/gateway.js';
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

  t.test('issue 31 item 7: OpenAI and Anthropic members on every entry and the page', async (t) => {
    const body: any = await (await fetch(`${gw.url}/v1/models`)).json();
    const swift = body.data[0];
    t.equal(typeof swift.created, 'number');
    t.equal(swift.owned_by, 'northwind');
    t.equal(swift.type, 'model');
    t.equal(swift.display_name, swift.display_name_en);
    t.equal(Date.parse(swift.created_at) / 1000, swift.created, 'created_at is created, as RFC 3339');
    t.same([body.has_more, body.first_id, body.last_id], [false, 'nw-swift-1', 'nw-embed-1']);
  });

  t.test('issue 31 item 7: limit, after_id, before_id page the list', async (t) => {
    const page = async (q: string) => (await fetch(`${gw.url}/v1/models?${q}`)).json() as Promise<any>;
    const first = await page('limit=2');
    t.same([first.data.map((m: any) => m.id), first.has_more, first.first_id, first.last_id], [['nw-swift-1', 'au-atlas-2'], true, 'nw-swift-1', 'au-atlas-2']);
    const next = await page(`limit=2&after_id=${first.last_id}`);
    t.same([next.data.map((m: any) => m.id), next.has_more], [['ks-quill-1', 'au-canvas-1'], true]);
    const last = await page(`limit=2&after_id=${next.last_id}`);
    t.same([last.data.map((m: any) => m.id), last.has_more], [['nw-embed-1'], false]);
    const before = await page('limit=2&before_id=au-canvas-1');
    t.same([before.data.map((m: any) => m.id), before.has_more], [['au-atlas-2', 'ks-quill-1'], true]);
    for (const q of ['limit=0', 'limit=1001', 'limit=x', 'after_id=nope', 'limit=1&limit=2', 'after_id=a&before_id=b']) {
      const res = await fetch(`${gw.url}/v1/models?${q}`);
      t.equal(res.status, 400, q);
      t.equal(((await res.json()) as any).error.code, 'invalid_request', q);
    }
  });

  t.test('issue 34 item 8 (issue 31 item 7): GET /v1/models/{id} by name or alias is the list\'s object; unknown is 404', async (t) => {
    const list: any = await (await fetch(`${gw.url}/v1/models`)).json();
    for (const name of ['nw-swift-1', 'swift']) {
      const res = await fetch(`${gw.url}/v1/models/${name}`);
      t.equal(res.status, 200, name);
      t.same(await res.json(), list.data[0], `${name}: the same object as in the list`);
    }
    const missing = await fetch(`${gw.url}/v1/models/nw-legacy-0`);
    t.equal(missing.status, 404, 'an inactive model does not exist here');
    t.equal(((await missing.json()) as any).error.code, 'model_not_found');
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
    await waitReady(gw);
    t.equal((await fetch(`${gw.url}/readyz`)).status, 200);
    const text = await (await fetch(`${gw.opsUrl}/metrics`)).text();
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
