// POST /v1/images/generations through the official `openai` package,
// unchanged, against a real gateway over real HTTP (the simulator as the
// supplier): n images returned and n units charged at the model's image
// price; refusals before any supplier request; edits and variations answer
// 404 in the images envelope; typical_request reflects image spend.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import t from 'tap';
import { parseMoney } from '../../src/money/money.js';
import { PNG } from '../../src/simulator/images.js';
import { startSimulator } from '../../src/simulator/index.js';
import { IMAGES_MAX_N } from '../../src/surfaces/images/schema.js';
import { startGateway } from '../helpers/gateway.js';
import { ADMIN_TOKEN, organization, provision, usageRows, usageRowsAtLeast } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';

/** au-canvas-1's image price in the demo catalog (config/catalog.seed.json), micros per image unit. */
const CANVAS_PER_IMAGE = 40000;

const db = await testDatabase(t);
if (db !== null) {
  const override = join(t.testdir({}), 'fast-typical.json');
  writeFileSync(override, JSON.stringify({ catalog: { typical_refresh_ms: 300 } }));
  const sim = await startSimulator({ instances: ['alpha', 'beta', 'gamma'] });
  const gw = await startGateway({ env: { DATABASE_URL: db, SIMULATOR_URL: sim.url, ADMIN_TOKEN, BILLING_FLUSH_MS: '0', TOLLGATE_CONFIG: override } });
  t.teardown(async () => {
    await gw.stop();
    await sim.close();
  });
  const sdk = (key: string) => new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  const rowsOf = (orgId: string, n: number): Promise<any[]> => usageRowsAtLeast(gw.url, orgId, n);
  const post = async (path: string, key: string, body: unknown, contentType = 'application/json') => {
    const res = await fetch(`${gw.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': contentType },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { res, body: (await res.json()) as any };
  };

  t.test('images.generate n=2: both images returned, 2 units charged at the image price, one usage row', async (t) => {
    const { key, orgId } = await provision(gw.url, { balance: '5.00' });
    const { data: reply, response } = await sdk(key).images.generate({ model: 'canvas', prompt: 'a red kite over the sea', n: 2, size: '256x256' }).withResponse();
    t.type(reply.created, 'number');
    t.equal(reply.data!.length, 2, 'both images');
    for (const img of reply.data!) t.ok(Buffer.from(img.b64_json!, 'base64').equals(PNG), 'the supplier\'s image bytes, unchanged');
    const rows = await rowsOf(orgId, 1);
    t.equal(rows.length, 1);
    const row = rows[0];
    t.equal(row.request_id, response.headers.get('x-request-id'));
    t.same([row.surface, row.outcome, row.image_units, row.input_tokens, row.output_tokens], ['images', 'completed', 2, 0, 0], '2 image units, no tokens');
    t.equal(parseMoney(row.reserved), 2 * CANVAS_PER_IMAGE, 'n units reserved');
    t.equal(parseMoney(row.charged), 2 * CANVAS_PER_IMAGE, 'the 2 units returned charged');
    const org = await organization(gw.url, orgId);
    t.equal(parseMoney(org.balance), 5_000_000 - 2 * CANVAS_PER_IMAGE, 'the balance moved by exactly price × units');
    t.equal(org.held, '0.00');
  });

  t.test('n defaults to 1: one image, one unit', async (t) => {
    const { key, orgId } = await provision(gw.url, { balance: '5.00' });
    const reply = await sdk(key).images.generate({ model: 'au-canvas-1', prompt: 'a lighthouse' });
    t.equal(reply.data!.length, 1);
    const [row] = await rowsOf(orgId, 1);
    t.equal(row.image_units, 1);
    t.equal(parseMoney(row.charged), CANVAS_PER_IMAGE);
  });

  t.test('refusals before any supplier request, in the images envelope (param null), nothing charged', async (t) => {
    const { key, orgId } = await provision(gw.url, { balance: '5.00' });
    const refusals: Array<[string, unknown]> = [
      ['model required', { prompt: 'x' }],
      ['prompt required', { model: 'canvas' }],
      ['n = 0', { model: 'canvas', prompt: 'x', n: 0 }],
      [`n above ${IMAGES_MAX_N}`, { model: 'canvas', prompt: 'x', n: IMAGES_MAX_N + 1 }],
      ['n not an integer', { model: 'canvas', prompt: 'x', n: 1.5 }],
      ['n beyond 2^53', { model: 'canvas', prompt: 'x', n: 1e308 }],
      ['size not WIDTHxHEIGHT', { model: 'canvas', prompt: 'x', size: 'large' }],
      ['size side above 4096', { model: 'canvas', prompt: 'x', size: '8192x8192' }],
      ['size with a zero side', { model: 'canvas', prompt: 'x', size: '0x512' }],
    ];
    for (const [name, body] of refusals) {
      const count = sim.requestCount();
      const { res, body: err } = await post('/v1/images/generations', key, body);
      t.equal(res.status, 400, name);
      t.same(err, { error: { code: 'invalid_request', message: err.error.message, param: null, type: 'invalid_request_error' } }, `${name}: the images envelope`);
      t.equal(sim.requestCount(), count, `${name}: no supplier request`);
    }
    const org = await organization(gw.url, orgId);
    t.same([org.balance, org.held], ['5.00', '0.00']);
    t.equal((await usageRows(gw.url, orgId)).length, 0);
  });

  t.test('edits and variations: 404 in the images envelope, the route does not exist', async (t) => {
    const { key } = await provision(gw.url);
    for (const path of ['/v1/images/edits', '/v1/images/variations']) {
      const count = sim.requestCount();
      const { res, body } = await post(path, key, '--x\r\nContent-Disposition: form-data; name="prompt"\r\n\r\nhi\r\n--x--\r\n', 'multipart/form-data; boundary=x');
      t.equal(res.status, 404, path);
      t.same(body, { error: { code: 'not_found', message: body.error.message, param: null, type: 'not_found_error' } }, `${path}: the images envelope`);
      t.equal(sim.requestCount(), count);
    }
    const viaSdk = await sdk(key).images.createVariation({ image: new File([PNG], 'a.png', { type: 'image/png' }) }).catch((e) => e);
    t.ok(viaSdk instanceof OpenAI.NotFoundError, 'the SDK sees a NotFoundError');
  });

  t.test('a supplier failure before the reply: nothing charged, the hold released', async (t) => {
    const { key, orgId } = await provision(gw.url, { balance: '5.00' });
    const { res, body } = await post('/v1/images/generations', key, { model: 'canvas', prompt: 'x [sim:status=500]', n: 2 });
    t.equal(res.status, 502);
    t.equal(body.error.param, null);
    const [row] = await rowsOf(orgId, 1);
    t.same([row.outcome, row.charged, row.image_units], ['failed', '0.00', 0]);
    const org = await organization(gw.url, orgId);
    t.same([org.balance, org.held], ['5.00', '0.00']);
  });

  t.test('typical_request of the image model reflects image spend', async (t) => {
    let canvas: any;
    for (let i = 0; i < 50 && canvas?.typical_request?.requests !== 2; i++) {
      await new Promise((r) => setTimeout(r, 100));
      canvas = ((await (await fetch(`${gw.url}/v1/models`)).json()) as any).data.find((m: any) => m.id === 'au-canvas-1');
    }
    t.equal(canvas.typical_request.requests, 2, 'the two completed image calls above');
    t.equal(parseMoney(canvas.typical_request.average_spend), (2 * CANVAS_PER_IMAGE + CANVAS_PER_IMAGE) / 2, 'the average of 2 units and 1 unit at the image price');
  });
}
