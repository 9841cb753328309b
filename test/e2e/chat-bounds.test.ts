// What is reserved for a chat call, seen over real HTTP (issue 12, items 2, 3
// and 7): integers beyond 2^53 refused by name, the output bound as the model
// can produce it, exactly one bound in the body the supplier receives, and an
// input estimate per part (text, images) instead of the body's bytes.
import OpenAI from 'openai';
import { get_encoding } from 'tiktoken';
import t from 'tap';
import { formatMoney, parseMoney } from '../../src/money/money.js';
import { boundCost } from '../../src/billing/pricing.js';
import { startSimulator, type SimulatorEvent } from '../../src/simulator/index.js';
import { startGateway } from '../helpers/gateway.js';
import { ADMIN_TOKEN, organization, provision, usageRows } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';

/** Prices of config/catalog.seed.json. */
const SWIFT = { inputPerMtok: 150000, cachedInputPerMtok: 75000, outputPerMtok: 600000, imageUnit: 0 }; // max_output_tokens 32768
const ATLAS = { inputPerMtok: 2500000, cachedInputPerMtok: 1250000, outputPerMtok: 10000000, imageUnit: 0 }; // max_output_tokens 65536
/** OpenAI's documented image cost: 85 + 170 per 512 px tile; at most 2 × 4 tiles at high detail (768 × 2048). */
const IMAGE_HIGH_MAX = 85 + 170 * 8;
const IMAGE_LOW = 85;

const db = await testDatabase(t);
if (db !== null) {
  const sim = await startSimulator({ instances: ['alpha', 'beta', 'gamma'] });
  t.teardown(() => sim.close());
  const gw = await startGateway({ env: { DATABASE_URL: db, SIMULATOR_URL: sim.url, ADMIN_TOKEN } });
  t.teardown(() => gw.stop());

  /** Bodies the simulator received, as raw text, while `fn` runs. */
  async function received(fn: () => Promise<unknown>): Promise<string[]> {
    const bodies: string[] = [];
    const off = sim.on((e: SimulatorEvent) => {
      if (e.type === 'request' && e.body !== undefined) bodies.push(e.body);
    });
    try {
      await fn();
    } finally {
      off();
    }
    return bodies;
  }

  async function post(key: string, body: string | object): Promise<{ status: number; json: any }> {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, json: text === '' ? null : JSON.parse(text) };
  }

  /** The amount held while a slow call is in flight (polled), then the call's status once it ends. */
  async function heldDuring(key: string, orgId: string, body: string): Promise<{ held: number; status: number }> {
    const call = post(key, body);
    let held = 0;
    for (let i = 0; i < 100 && held === 0; i++) {
      held = parseMoney((await organization(gw.url, orgId)).held)!;
      if (held === 0) await new Promise((r) => setTimeout(r, 20));
    }
    return { held, status: (await call).status };
  }

  const hi = (extra: object = {}) => ({ model: 'nw-swift-1', messages: [{ role: 'user', content: 'hi [sim:words=2]' }], ...extra });

  t.test('issue 12 item 2: integers beyond 2^53 and n beyond 128 are refused by name, before any money or supplier', async (t) => {
    const { key, orgId } = await provision(gw.url);
    const before = sim.requestCount();
    const cases: Array<[string, string]> = [
      ['{"model":"nw-swift-1","messages":[{"role":"user","content":"hi"}],"max_tokens":1e308,"n":2}', 'max_tokens'],
      ['{"model":"nw-swift-1","messages":[{"role":"user","content":"hi"}],"max_tokens":1e200}', 'max_tokens'],
      ['{"model":"nw-swift-1","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":9007199254740992}', 'max_completion_tokens'],
      ['{"model":"nw-swift-1","messages":[{"role":"user","content":"hi"}],"max_tokens":16,"n":1e308}', 'n'],
      ['{"model":"nw-swift-1","messages":[{"role":"user","content":"hi"}],"max_tokens":16,"n":129}', 'n'],
    ];
    for (const [body, param] of cases) {
      const r = await post(key, body);
      t.equal(r.status, 400, `${body} → 400`);
      t.equal(r.json?.error?.param, param, `names ${param}`);
      t.equal(r.json?.error?.type, 'invalid_request_error');
    }
    t.equal(sim.requestCount(), before, 'no supplier was called');
    t.same(await usageRows(gw.url, orgId), [], 'no usage row');
    t.equal((await organization(gw.url, orgId)).balance, '100.00', 'nothing charged');
  });

  t.test('issue 12 item 2: a stated bound above the model ceiling is refused by name, as OpenAI does', async (t) => {
    const { key } = await provision(gw.url);
    const over = await post(key, hi({ max_tokens: 32769 }));
    t.equal(over.status, 400);
    t.equal(over.json.error.param, 'max_tokens');
    const overNew = await post(key, hi({ max_completion_tokens: 65537, model: 'atlas' }));
    t.equal(overNew.status, 400);
    t.equal(overNew.json.error.param, 'max_completion_tokens');
    t.equal((await post(key, hi({ max_tokens: 32768 }))).status, 200, 'the model ceiling itself is accepted');
  });

  t.test('issue 12 item 2 (pinned; held so before the fix too): the output bound held is min(stated or default, model max_output_tokens) × n', async (t) => {
    const { key, orgId } = await provision(gw.url);
    const slow = (extra: object) => JSON.stringify({ model: 'atlas', messages: [{ role: 'user', content: 'slow [sim:words=2] [sim:delay_ms=300]' }], ...extra });
    const stated = slow({ max_tokens: 65536, n: 2 });
    const a = await heldDuring(key, orgId, stated);
    t.equal(a.status, 200);
    t.equal(a.held, boundCost(ATLAS, { inputTokens: Buffer.byteLength(stated), outputTokens: 65536 * 2, imageUnits: 0 }), 'stated ceiling × n');
    const unstated = slow({ n: 3 });
    const b = await heldDuring(key, orgId, unstated);
    t.equal(b.status, 200);
    t.equal(b.held, boundCost(ATLAS, { inputTokens: Buffer.byteLength(unstated), outputTokens: 32768 * 3, imageUnits: 0 }), 'default 32768 × n');
    t.equal((await organization(gw.url, orgId)).held, '0.00', 'no hold left');
  });

  t.test('issue 12 item 3: a null ceiling is not forwarded; the supplier receives exactly one bound, the reserved one', async (t) => {
    const { key } = await provision(gw.url);
    const members = (raw: string) => [...raw.matchAll(/"(max_tokens|max_completion_tokens)"\s*:\s*([^,}\s]+)/g)].map((m) => [m[1], m[2]]);
    const cases: Array<[object, string, string]> = [
      [{ max_completion_tokens: null }, 'max_completion_tokens', '32768'],
      [{ max_tokens: null }, 'max_completion_tokens', '32768'],
      [{ max_tokens: null, max_completion_tokens: null }, 'max_completion_tokens', '32768'],
      [{ max_tokens: 50, max_completion_tokens: null }, 'max_tokens', '50'],
      [{ max_tokens: null, max_completion_tokens: 40 }, 'max_completion_tokens', '40'],
      [{ max_tokens: 30, max_completion_tokens: 30 }, 'max_completion_tokens', '30'],
      [{ max_tokens: 20 }, 'max_tokens', '20'],
    ];
    for (const [extra, member, value] of cases) {
      let status = 0;
      const bodies = await received(async () => {
        status = (await post(key, hi(extra))).status;
      });
      t.equal(status, 200, JSON.stringify(extra));
      t.equal(bodies.length, 1, 'one upstream call');
      t.same(members(bodies[0]!), [[member, value]], `${JSON.stringify(extra)} → upstream carries only ${member}: ${value}`);
    }
    // Through the official SDK too, as a client would send it.
    const sdk = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const bodies = await received(async () => {
      const stream = await sdk.chat.completions.create({
        model: 'nw-swift-1',
        messages: [{ role: 'user', content: 'hi [sim:words=2]' }],
        max_completion_tokens: null,
        stream: true,
      });
      for await (const _ of stream);
    });
    t.same(members(bodies[0]!), [['max_completion_tokens', '32768']], 'streamed through the SDK: one bound');
  });

  t.test('issue 12 item 7: an organization that can pay the real token cost but not the byte bound is admitted', async (t) => {
    // ~40 KB of ordinary English: about 5 bytes per token.
    const words = ['the', 'gateway', 'reserves', 'what', 'a', 'call', 'can', 'cost', 'before', 'calling', 'its', 'supplier', 'and', 'settles', 'after'];
    let text = '';
    for (let i = 0; text.length < 40_000; i++) text += words[(i * 7) % words.length] + (i % 11 === 10 ? '. ' : ' ');
    const body = JSON.stringify({ model: 'nw-swift-1', max_tokens: 16, messages: [{ role: 'user', content: `${text} [sim:words=3]` }] });
    const enc = get_encoding('o200k_base');
    const tokens = enc.encode_ordinary(text).length;
    enc.free();
    const byteBound = boundCost(SWIFT, { inputTokens: Buffer.byteLength(body), outputTokens: 16, imageUnits: 0 });
    const balance = boundCost(SWIFT, { inputTokens: 2 * tokens, outputTokens: 16, imageUnits: 0 });
    t.ok(balance < byteBound, `precondition: twice the real cost (${balance} µ) is below the byte bound (${byteBound} µ)`);
    const { key, orgId } = await provision(gw.url, { balance: formatMoney(balance) });
    const r = await post(key, body);
    t.equal(r.status, 200, 'admitted');
    t.ok(r.json.usage.prompt_tokens >= tokens, 'the supplier counted the text');
    const rows = await usageRows(gw.url, orgId);
    t.equal(rows.length, 1);
    t.equal(rows[0].charged, formatMoney(boundCost(SWIFT, { inputTokens: r.json.usage.prompt_tokens, outputTokens: r.json.usage.completion_tokens, imageUnits: 0 })), 'charged the real cost, in full');
    const org = await organization(gw.url, orgId);
    t.equal(org.held, '0.00', 'no hold left');
    t.equal(parseMoney(org.balance), balance - parseMoney(rows[0].charged)!);
    // Still refused when even the counted estimate does not fit.
    const poor = await provision(gw.url, { balance: formatMoney(Math.floor(balance / 4)) });
    const refused = await post(poor.key, body);
    t.equal(refused.status, 402);
    t.equal(refused.json.error.code, 'insufficient_funds');
    t.equal((await organization(gw.url, poor.orgId)).held, '0.00');
  });

  t.test('issue 12 item 7: an image part reserves its documented tile cost, not its bytes', async (t) => {
    const { key, orgId } = await provision(gw.url);
    const slowText = { type: 'text', text: 'look [sim:words=2] [sim:delay_ms=300]' };
    const url = 'https://example.com/cat.png';
    const body = (detail: string | null, imageUrl = url) =>
      JSON.stringify({
        model: 'atlas',
        max_tokens: 10,
        messages: [{ role: 'user', content: [slowText, { type: 'image_url', image_url: detail === null ? { url: imageUrl } : { url: imageUrl, detail } }] }],
      });
    const expected = (raw: string, imageUrl: string, tokens: number) =>
      boundCost(ATLAS, { inputTokens: Buffer.byteLength(raw) - imageUrl.length + tokens, outputTokens: 10, imageUnits: 0 });
    for (const [detail, tokens] of [['high', IMAGE_HIGH_MAX], [null, IMAGE_HIGH_MAX], ['auto', IMAGE_HIGH_MAX], ['low', IMAGE_LOW]] as const) {
      const raw = body(detail);
      const r = await heldDuring(key, orgId, raw);
      t.equal(r.status, 200);
      t.equal(r.held, expected(raw, url, tokens), `detail ${detail ?? '(absent)'}: ${tokens} tokens for the image`);
    }
    // A 300 KB data URL at low detail is 85 tokens, not 300 000.
    const data = `data:image/png;base64,${'A'.repeat(300_000)}`;
    const big = body('low', data);
    const r = await heldDuring(key, orgId, big);
    t.equal(r.status, 200);
    t.equal(r.held, expected(big, data, IMAGE_LOW), 'a large inline image at low detail holds 85 tokens');
    t.equal((await organization(gw.url, orgId)).held, '0.00', 'no hold left');
  });
}
