// What operators watch (issue 37): /metrics counts the traffic's tokens and
// money per model, surface and outcome, moving by exactly the usage rows'
// figures over a mixed run on every surface (two workers: the primary merges
// their counters); the money reserved and refused (402) per surface; and one
// request log line per call that says what it was charged and where its time
// went, with no prompt, answer or key in it.
import t from 'tap';
import { gatewayWithSimulator, waitReady } from '../helpers/gateway.js';
import { micros } from '../helpers/money.js';
import { provision, usageRowsAtLeast } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';

/** The demo catalog's model ids (config/catalog.seed.json) → canonical names, the metrics' model label. */
const CANONICAL: Record<string, string> = {
  '20000000-0000-4000-8000-000000000001': 'nw-swift-1',
  '20000000-0000-4000-8000-000000000002': 'au-atlas-2',
  '20000000-0000-4000-8000-000000000003': 'ks-quill-1',
  '20000000-0000-4000-8000-000000000004': 'nw-embed-1',
  '20000000-0000-4000-8000-000000000005': 'au-canvas-1',
};
const TOKENS = ['input_tokens', 'cached_input_tokens', 'output_tokens', 'image_units'] as const;
/** A usage row's figure as the metrics count it: the console API writes money as decimals (`charged`). */
const figures = (row: any): Array<[string, number]> => [...TOKENS.map((f): [string, number] => [f, Number(row[f])]), ['charged_micros', micros(row.charged)]];
const SECRET_PROMPT = 'zebra-umbrella-secret-prompt';

/** tollgate_<name>{labels} value, for every series of the text whose name starts with one of `prefixes`. */
function series(text: string, prefix: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('tollgate_' + prefix)) continue;
    const sp = line.lastIndexOf(' ');
    out.set(line.slice('tollgate_'.length, sp), Number(line.slice(sp + 1)));
  }
  return out;
}

const db = await testDatabase(t);
if (db !== null) {
  const { gw } = await gatewayWithSimulator(t, db, { env: { BILLING_FLUSH_MS: '0' }, workers: 2 });
  await waitReady(gw);
  const post = async (key: string, path: string, body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${gw.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    await res.arrayBuffer();
    return { status: res.status, rid: res.headers.get('x-request-id') };
  };
  const metrics = async () => (await fetch(`${gw.opsUrl}/metrics`)).text();

  t.test('the token and money counters move by exactly the usage rows\' figures; reserved and refused money per surface', async (t) => {
    const { key, orgId } = await provision(gw.url);
    const poor = await provision(gw.url, { balance: '0.000001' });
    await new Promise((r) => setTimeout(r, 300)); // the keys reach the second worker
    const chat = (content: string, stream = false) => post(key, '/v1/chat/completions', { model: 'nw-swift-1', stream, messages: [{ role: 'user', content }] });
    const calls = await Promise.all([
      chat(`${SECRET_PROMPT} [sim:words=5]`),
      chat('hello [sim:words=7]', true),
      chat('failover [sim:status=503@alpha] [sim:words=3]'),
      chat('broken [sim:status=500]'),
      post(key, '/v1/chat/completions', { model: 'atlas', messages: [{ role: 'user', content: 'alias [sim:words=4]' }] }),
      post(key, '/v1/responses', { model: 'nw-swift-1', input: 'responses [sim:words=6]' }),
      post(key, '/v1/responses', { model: 'au-atlas-2', stream: true, input: 'streamed [sim:words=9]' }),
      post(key, '/v1/messages', { model: 'ks-quill-1', max_tokens: 64, messages: [{ role: 'user', content: 'messages [sim:words=5]' }] }, { 'anthropic-version': '2023-06-01' }),
      post(key, '/v1/embeddings', { model: 'nw-embed-1', encoding_format: 'base64', input: ['one', 'two three'] }),
      post(key, '/v1/images/generations', { model: 'au-canvas-1', prompt: 'a kite', n: 2, size: '256x256' }),
    ]);
    const refused = await post(poor.key, '/v1/chat/completions', { model: 'nw-swift-1', messages: [{ role: 'user', content: 'hi' }] });
    t.same(calls.map((c) => c.status), [200, 200, 200, 502, 200, 200, 200, 200, 200, 200], 'every surface answered; one call failed upstream');
    t.equal(refused.status, 402);

    const rows = await usageRowsAtLeast(gw.url, orgId, calls.length);
    t.equal(rows.length, calls.length, 'a usage row per reserved call');
    const expected = new Map<string, number>();
    const add = (k: string, n: number) => expected.set(k, (expected.get(k) ?? 0) + n);
    const reserved = new Map<string, number>();
    for (const row of rows) {
      const labels = `{model="${CANONICAL[row.model_id]}",surface="${row.surface}",outcome="${row.outcome}"}`;
      add('usage_calls' + labels, 1);
      for (const [f, n] of figures(row)) add(`usage_${f}${labels}`, n);
      reserved.set(row.surface, (reserved.get(row.surface) ?? 0) + micros(row.reserved));
    }
    t.ok(new Set(rows.map((r) => r.surface)).size >= 5, 'every surface is in the run');
    t.ok(rows.some((r) => r.outcome === 'failed'), 'a failed outcome is in the run');
    const text = await metrics();
    t.same(series(text, 'usage_'), expected, 'every usage series equals the sum of its rows, and there is no other');
    for (const [surface, micros] of reserved) t.equal(series(text, 'billing_reserved_micros').get(`billing_reserved_micros{surface="${surface}"}`), micros, `reserved micros on ${surface}`);
    t.equal(series(text, 'billing_funds_refusals').get('billing_funds_refusals{surface="chat_completions"}'), 1, 'the 402 counted on its surface');
    t.ok((series(text, 'billing_refused_micros').get('billing_refused_micros{surface="chat_completions"}') ?? 0) > 1, 'the money the 402 asked for');
    t.notMatch(text, orgId, 'no organization in the metrics');
    t.notMatch(text, /key_id|org_id|org=/, 'no key or organization label');

    // The request log line: one per call, with what it was charged and where its time went.
    const lines = new Map<string, Record<string, any>>();
    for (const row of rows) lines.set(row.request_id, await gw.waitForLog((l) => l.msg === 'request' && l.rid === row.request_id));
    for (const row of rows) {
      const line = lines.get(row.request_id)!;
      t.equal(line.model, CANONICAL[row.model_id], 'model');
      t.equal(line.outcome, row.outcome, 'outcome');
      t.equal(line.metered_source, row.metered_source, 'metered_source');
      for (const [f, n] of figures(row)) t.equal(line[f], n, f);
      t.equal(typeof line.reserve_ms, 'number', 'time waiting for the reservation');
      t.equal(typeof line.ms, 'number', 'total time');
      if (row.outcome !== 'failed') {
        t.equal(line.supplier, row.supplier, 'supplier');
        t.equal(typeof line.route, 'string', 'route');
        t.equal(typeof line.supplier_ttfb_ms, 'number', "the supplier's time to its headers");
        t.ok(line.supplier_ttfb_ms <= line.ms, 'within the total');
      }
    }
    const failover = [...lines.values()].find((l) => l.attempts === 2);
    t.ok(failover, 'the call that failed over says it took two attempts');
    t.equal(failover?.supplier, 'sim-beta');
    t.equal(failover?.route, 'swift-1-mirror');
    t.equal(gw.logs.filter((l) => l.msg === 'request' && lines.has(l.rid)).length, rows.length, 'one line per call');
    t.notMatch(gw.output(), SECRET_PROMPT, 'no prompt in the log');
    t.notMatch(gw.output(), key, 'no key in the log');
    t.notMatch(gw.output(), /"choices"|"embedding"|b64_json/, 'no answer in the log');
  });
}
