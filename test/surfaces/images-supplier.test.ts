// Images against a supplier that misbehaves (issue 16 leftovers), on a real
// gateway over real HTTP: a stand-in images supplier applied through
// `tollgate catalog apply` answers by prompt —
// - more images than n: the first n answered, n units settled (the hold), a
//   warning logged that carries no prompt text;
// - megabytes of base64 (over the reply-pool threshold): decoded in the pool,
//   every byte answered unchanged;
// - a reply over suppliers.max_reply_bytes: 502 in the images envelope,
//   nothing charged, the hold released, the gateway still serving.
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import t from 'tap';
import { parseMoney } from '../../src/money/money.js';
import { REPLY_POOL_BYTES } from '../../src/surfaces/reply-pool.js';
import { tollgate } from '../console/keys-helpers.js';
import { imagesEnvelopeFault } from '../helpers/envelopes.js';
import { startGateway } from '../helpers/gateway.js';
import { ADMIN_TOKEN, organization, provision, usageRowsAtLeast } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';

const PER_IMAGE = 25_000;
const MAX_REPLY_BYTES = 8 << 20;
/** ~1.5 MB of base64 per image: two are well past the pool threshold, still under the reply limit. */
const BIG = Buffer.alloc(1_100_000, 7).toString('base64');
const SECRET_PROMPT = 'a-prompt-that-must-never-be-logged';

const db = await testDatabase(t);
if (db !== null) {
  let requests = 0;
  const supplier = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      requests++;
      const { prompt, n } = JSON.parse(body) as { prompt: string; n?: number };
      const asked = n ?? 1;
      let data: unknown[];
      if (prompt.includes('[too-many]')) data = Array.from({ length: asked + 2 }, (_, i) => ({ b64_json: Buffer.from(`image ${i}`).toString('base64') }));
      else if (prompt.includes('[big]')) data = Array.from({ length: asked }, () => ({ b64_json: BIG }));
      else if (prompt.includes('[over-limit]')) data = Array.from({ length: 7 }, () => ({ b64_json: BIG }));
      else data = [{ url: 'https://example.invalid/1.png' }];
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ created: 1, data }));
    });
  });
  supplier.listen(0, '127.0.0.1');
  await once(supplier, 'listening');
  const supplierUrl = `http://127.0.0.1:${(supplier.address() as AddressInfo).port}`;

  const dir = t.testdir({});
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ suppliers: { max_reply_bytes: MAX_REPLY_BYTES } }));
  const catalogFile = join(dir, 'catalog.json');
  writeFileSync(
    catalogFile,
    JSON.stringify({
      vendors: [{ code: 'odd', display_name_en: 'Odd', display_name_ru: 'Odd' }],
      suppliers: [{ name: 'odd-images', wire_protocol: 'openai-compatible', base_url: `${supplierUrl}/v1`, credential_env: null, protocols: ['images'] }],
      models: [{
        vendor: 'odd', canonical_name: 'odd-canvas-1', display_name_en: 'O', display_name_ru: 'O', description_en: 'o', description_ru: 'o',
        banner_seed: 1, modality_codes: ['image_generation'],
        capabilities: [{ protocol_code: 'images', modality_code: 'image_generation' }],
        routes: [{ supplier: 'odd-images', protocol_code: 'images', upstream_model: 'odd-1' }],
        price: { image_unit_micros: PER_IMAGE },
      }],
    }),
  );
  const gw = await startGateway({ env: { DATABASE_URL: db, ADMIN_TOKEN, BILLING_FLUSH_MS: '0', CATALOG_REFRESH_MS: '200', TOLLGATE_CONFIG: config } });
  t.teardown(async () => {
    await gw.stop();
    supplier.close();
  });
  const applied = await tollgate(['catalog', 'apply', catalogFile], { DATABASE_URL: db });
  if (applied.code !== 0) throw new Error(`catalog apply: ${applied.stderr}`);

  const generate = (key: string, body: object) =>
    fetch(`${gw.url}/v1/images/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'odd-canvas-1', ...body }),
    });
  // The new revision reaches the worker within catalog.refresh_ms.
  const { key: warmKey } = await provision(gw.url, { balance: '1.00' });
  for (let i = 0; i < 50 && (await generate(warmKey, { prompt: 'warm' })).status !== 200; i++) await new Promise((r) => setTimeout(r, 100));

  t.test('more images than n: the first n answered, n units settled, a warning without the prompt', async (t) => {
    const { key, orgId } = await provision(gw.url, { balance: '5.00' });
    const from = gw.logs.length;
    const res = await generate(key, { prompt: `[too-many] ${SECRET_PROMPT}`, n: 2 });
    t.equal(res.status, 200);
    const body = (await res.json()) as any;
    t.same(body.data.map((d: any) => Buffer.from(d.b64_json, 'base64').toString()), ['image 0', 'image 1'], 'the first n, in the supplier order');
    const [row] = await usageRowsAtLeast(gw.url, orgId, 1);
    t.same([row.image_units, parseMoney(row.reserved), parseMoney(row.charged)], [2, 2 * PER_IMAGE, 2 * PER_IMAGE], 'n units held and charged, not 4');
    t.equal((await organization(gw.url, orgId)).held, '0.00');
    const warning = await gw.waitForLog((l) => typeof l.msg === 'string' && l.msg.includes('more than n'), 3000);
    t.equal(warning.rid, res.headers.get('x-request-id'), 'the warning names the request');
    t.notOk(gw.logs.slice(from).some((l) => JSON.stringify(l).includes(SECRET_PROMPT)), 'no prompt text in any log line');
  });

  t.test('megabytes of base64 (decoded in the pool): every byte answered unchanged, the units returned charged', async (t) => {
    const { key, orgId } = await provision(gw.url, { balance: '5.00' });
    const res = await generate(key, { prompt: '[big]', n: 2 });
    t.equal(res.status, 200);
    const text = await res.text();
    t.ok(text.length > REPLY_POOL_BYTES * 100, `a ${(text.length / 1048576).toFixed(1)} MB answer`);
    const body = JSON.parse(text);
    t.equal(body.data.length, 2);
    t.ok(body.data.every((d: any) => d.b64_json === BIG), 'the base64 passed through unchanged');
    const [row] = await usageRowsAtLeast(gw.url, orgId, 1);
    t.same([row.image_units, parseMoney(row.charged)], [2, 2 * PER_IMAGE]);
  });

  t.test('a reply over suppliers.max_reply_bytes: 502 in the images envelope, nothing charged, the hold released', async (t) => {
    const { key, orgId } = await provision(gw.url, { balance: '5.00' });
    const before = requests;
    const res = await generate(key, { prompt: '[over-limit]', n: 1 });
    t.equal(res.status, 502);
    t.equal(imagesEnvelopeFault(await res.json()), null, 'the images envelope');
    t.equal(requests - before, 1, 'asked once (no route to fail over to)');
    const [row] = await usageRowsAtLeast(gw.url, orgId, 1);
    t.same([row.outcome, row.charged, row.image_units], ['failed', '0.00', 0]);
    const org = await organization(gw.url, orgId);
    t.same([org.held, org.balance], ['0.00', '5.00']);
    t.equal((await generate(key, { prompt: 'still serving' })).status, 200, 'the worker still serves');
  });
}
