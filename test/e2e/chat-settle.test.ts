// What a chat call is charged, over real HTTP on a real gateway (embedded
// ledger host, PostgreSQL store, the simulator supplier):
// - issue 12 item 7: a supplier reporting more usage than was reserved is
//   charged in full, the excess recorded as overdraft and counted;
// - issue 12 item 11: a call whose supplier reports no usage and whose local
//   count fails is charged a documented upper estimate, never zero.
import { cpSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { costOf } from '../../src/billing/pricing.js';
import { formatMoney, parseMoney } from '../../src/money/money.js';
import { packageRoot } from '../../src/config/paths.js';
import { startGateway, tempDir } from '../helpers/gateway.js';
import { ADMIN_TOKEN, organization, provision, usageRows } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';

/** The demo catalog's price of nw-swift-1 (config/catalog.seed.json). */
const SWIFT = { inputPerMtok: 150000, cachedInputPerMtok: 75000, outputPerMtok: 600000, imageUnit: 0 };

async function metric(opsUrl: string, name: string): Promise<number> {
  const text = await (await fetch(`${opsUrl}/metrics`)).text();
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

/**
 * A copy of this build whose token-count task throws, as a tokenizer thread
 * that cannot load tiktoken would: the gateway's own code is unchanged.
 */
function buildWithBrokenTokenizer(): string {
  const root = tempDir('tollgate-broken-count-');
  cpSync(join(packageRoot, 'dist'), join(root, 'dist'), { recursive: true });
  cpSync(join(packageRoot, 'config'), join(root, 'config'), { recursive: true });
  cpSync(join(packageRoot, 'web', 'static'), join(root, 'web', 'static'), { recursive: true });
  cpSync(join(packageRoot, 'package.json'), join(root, 'package.json'));
  symlinkSync(realpathSync(join(packageRoot, 'node_modules')), join(root, 'node_modules'));
  writeFileSync(join(root, 'dist/workers/count-tokens.js'), "export default function countTokens() { throw new Error('tokenizer unavailable'); }\n");
  return root;
}

const db = await testDatabase(t);
const brokenDb = db === null ? null : await testDatabase(t);
if (db !== null && brokenDb !== null) {
  const gw = await startGateway({ env: { DATABASE_URL: db, ADMIN_TOKEN }, workers: 1 });
  t.teardown(() => gw.stop());
  const brokenRoot = buildWithBrokenTokenizer();
  const broken = await startGateway({ env: { DATABASE_URL: brokenDb, ADMIN_TOKEN }, workers: 1, root: brokenRoot });
  t.teardown(async () => {
    await broken.stop();
    rmSync(brokenRoot, { recursive: true, force: true });
  });

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
    t.equal(await metric(gw.opsUrl, 'billing_overdraft_calls'), 1, 'counted: calls');
    t.equal(await metric(gw.opsUrl, 'billing_overdraft_micros'), cost - reserved, 'counted: micros');
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

  t.test('issue 12 item 11: no usage from the supplier and a failed local count charge the upper estimate, never zero', async (t) => {
    const { key, orgId } = await provision(broken.url, { balance: '1.00' });
    // Unary: 3 words, "the quick brown" = 15 bytes, below the output bound of 100.
    const unary = await chat(broken.url, key, { model: 'nw-swift-1', max_tokens: 100, messages: [{ role: 'user', content: 'hi [sim:words=3] [sim:no_usage]' }] });
    t.equal(unary.status, 200, 'the answer is delivered: ' + unary.text.slice(0, 200));
    t.equal(unary.json?.choices?.[0]?.message?.content, 'the quick brown');
    // Streamed, no usage in the stream: the supplier stops at the bound of 2 words ("the quick", 9 bytes).
    const streamed = await chat(broken.url, key, { model: 'nw-swift-1', max_tokens: 2, stream: true, messages: [{ role: 'user', content: 'hi [sim:words=5] [sim:no_usage]' }] });
    t.equal(streamed.status, 200);
    t.ok(streamed.text.endsWith('data: [DONE]\n\n'), 'the stream ends normally');

    const rows = await usageRows(broken.url, orgId);
    t.equal(rows.length, 2);
    const u = rows.find((r) => r.output_tokens === 15);
    const s = rows.find((r) => r !== u);
    t.ok(u !== undefined && s !== undefined, 'one row per call');
    if (u === undefined || s === undefined) return;
    t.equal(u.metered_source, 'estimate');
    t.ok(u.input_tokens > 0, 'input: the input bound reserved');
    t.equal(parseMoney(u.reserved), costOf(SWIFT, { inputTokens: u.input_tokens, cachedInputTokens: 0, outputTokens: 100, imageUnits: 0 }), 'the row’s input count is the bound that was priced and held');
    t.equal(parseMoney(u.charged), costOf(SWIFT, { inputTokens: u.input_tokens, cachedInputTokens: 0, outputTokens: 15, imageUnits: 0 }), 'charged: the input bound and the delivered bytes');
    t.equal(s.metered_source, 'estimate');
    t.equal(s.output_tokens, 2, 'output: the delivered bytes (9), at most the output bound (2)');
    t.equal(s.charged, s.reserved, 'so the stream is charged its whole hold, no overdraft');
    t.equal(s.overdraft, '0.00');
    t.ok(parseMoney(u.charged)! > 0 && parseMoney(s.charged)! > 0, 'never zero');
    const org = await organization(broken.url, orgId);
    t.equal(parseMoney(org.balance), 1_000_000 - parseMoney(u.charged)! - parseMoney(s.charged)!, 'the balance moved by both charges');
    t.equal(await metric(broken.opsUrl, 'billing_count_failed'), 2, 'both counted in tollgate_billing_count_failed_total');
  });
}
