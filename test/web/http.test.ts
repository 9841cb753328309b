// The web side over plain HTTP: assets compressed once and negotiated,
// ETags and immutable caching, the CSP on pages, and the console list
// endpoints' query strings (validated, REST envelope, cursor paging).
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { request } from 'undici';
import t from 'tap';
import { startGateway, type Gateway } from '../helpers/gateway.js';
import { ADMIN_TOKEN, console_, provision } from '../helpers/provision.js';

let gw: Gateway;
t.before(async () => {
  gw = await startGateway({ env: { ADMIN_TOKEN } });
});
t.teardown(() => gw?.stop());

const get = async (path: string, headers: Record<string, string> = {}) => {
  const r = await request(gw.url + path, { headers });
  return { status: r.statusCode, headers: r.headers as Record<string, string>, body: Buffer.from(await r.body.arrayBuffer()) };
};

t.test('assets: hashed names, brotli/gzip/identity by Accept-Encoding, ETag, immutable', async (t) => {
  const page = await get('/', { 'accept-language': 'ru-RU,ru;q=0.9,en;q=0.5' });
  t.equal(page.status, 200);
  t.equal(page.headers['content-language'], 'ru', 'Accept-Language is the first guess');
  t.match(page.headers['content-security-policy'], /script-src 'self'/);
  t.notMatch(page.headers['content-security-policy'], /unsafe-inline/, 'no inline script allowed');
  t.notMatch(page.body.toString(), /<script>|<script [^>]*>[^<]/, 'the page has no inline script');
  const js = /src="(\/assets\/app\.[0-9a-f]{12}\.js)"/.exec(page.body.toString())?.[1];
  t.ok(js, 'the script is named by its content hash');
  const plain = await get(js!);
  const br = await get(js!, { 'accept-encoding': 'gzip, deflate, br' });
  const gz = await get(js!, { 'accept-encoding': 'gzip;q=1, br;q=0' });
  t.equal(plain.headers['content-encoding'], undefined);
  t.equal(br.headers['content-encoding'], 'br');
  t.equal(gz.headers['content-encoding'], 'gzip', 'br;q=0 is refused');
  t.same(brotliDecompressSync(br.body), plain.body);
  t.same(gunzipSync(gz.body), plain.body);
  t.equal(plain.headers['cache-control'], 'public, max-age=31536000, immutable');
  t.equal(plain.headers.vary, 'Accept-Encoding');
  const again = await get(js!, { 'if-none-match': plain.headers.etag });
  t.equal(again.status, 304, 'If-None-Match → 304');
  t.equal((await get('/assets/app.000000000000.js')).status, 404);
  const landing304 = await get('/', { 'if-none-match': page.headers.etag, 'accept-language': 'ru' });
  t.equal(landing304.status, 304, 'the page too, by its ETag');
});

t.test('console list endpoints: query strings validated, cursor paging', async (t) => {
  const org = await provision(gw.url, { name: 'Paging Co' });
  for (let i = 0; i < 4; i++) await console_(gw.url, 'POST', `/organizations/${org.orgId}/keys`, { name: `k${i}` });
  const auth = { authorization: `Bearer ${ADMIN_TOKEN}` };
  const seen: string[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 5; pages++) {
    const r = await get(`/console/v1/organizations/${org.orgId}/keys?limit=2${cursor ? `&cursor=${cursor}` : ''}`, auth);
    const body = JSON.parse(r.body.toString());
    seen.push(...body.data.map((k: any) => k.name));
    cursor = body.next_cursor;
    if (!body.has_more) break;
  }
  t.same(seen, ['test key', 'k0', 'k1', 'k2', 'k3'], 'every key once, in creation order, two per page');
  for (const [query, param] of [
    ['limit=0', 'limit'],
    ['limit=201', 'limit'],
    ['limit=1e3', 'limit'],
    ['nope=1', 'nope'],
    ['cursor=!!', 'cursor'],
    ['cursor=abc', 'cursor'],
    ['limit=%ff', '(query)'],
    ['limit=1&limit=2', 'limit'],
  ]) {
    const r = await get(`/console/v1/organizations/${org.orgId}/keys?${query}`, auth);
    t.equal(r.status, 400, query);
    const err = JSON.parse(r.body.toString()).error;
    t.equal(err.code, 'invalid_request');
    t.equal(err.field_details?.[0]?.field, param, `${query} names ${param}`);
  }
  for (const query of ['day=2026-02-30', 'key_id=x', 'days=0']) {
    const path = query.startsWith('days') ? 'usage/daily' : 'usage';
    t.equal((await get(`/console/v1/organizations/${org.orgId}/${path}?${query}`, auth)).status, 400, `${path}?${query}`);
  }
  const found = JSON.parse((await get('/console/v1/organizations?q=paging%20co', auth)).body.toString());
  t.same(found.data.map((o: any) => o.name), ['Paging Co'], 'search by name');
});

t.test('a console call with no credential is 401 whatever its body, before parsing', async (t) => {
  for (const body of ['{', '[[[[[[[[[[', '{"name":"x"}']) {
    const r = await request(`${gw.url}/console/v1/organizations`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    t.equal(r.statusCode, 401, body);
    await r.body.arrayBuffer();
  }
});
