// Messages when things go wrong, and what count_tokens leaves alone, over
// real HTTP on a real gateway (PostgreSQL store, embedded ledger, the
// simulator's anthropic-compatible instance). Money is checked on every path.
import t from 'tap';
import { parseMoney } from '../../src/money/money.js';
import { gatewayWithSimulator } from '../helpers/gateway.js';
import { console_, organization, provision, usageRows } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';

/** Parses SSE text into [event name, data] pairs. */
function events(text: string): Array<[string, any]> {
  return text
    .split('\n\n')
    .filter((f) => f.startsWith('event: '))
    .map((f) => {
      const [ev, data] = f.split('\n');
      return [ev!.slice('event: '.length), JSON.parse(data!.slice('data: '.length))];
    });
}

const db = await testDatabase(t);
if (db !== null) {
  const { gw, sim } = await gatewayWithSimulator(t, db, { env: { BILLING_FLUSH_MS: '0' } });

  const post = async (path: string, key: string, body: unknown, carrier: 'x-api-key' | 'bearer' = 'x-api-key') => {
    const res = await fetch(`${gw.url}${path}`, {
      method: 'POST',
      headers: { ...(carrier === 'bearer' ? { authorization: `Bearer ${key}` } : { 'x-api-key': key }), 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    let text = '';
    try {
      text = await res.text();
    } catch {
      // a cut stream
    }
    return { res, text };
  };

  async function rowFor(orgId: string, requestId: string): Promise<any> {
    for (let i = 0; i < 50; i++) {
      const row = (await usageRows(gw.url, orgId)).find((r) => r.request_id === requestId);
      if (row) return row;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`no usage row for ${requestId}`);
  }

  t.test('[sim:fail_after=3] in a stream: an error event, no message_stop, the usage row incomplete, the hold settled', async (t) => {
    const { key, orgId } = await provision(gw.url, { balance: '10.00' });
    const { res, text } = await post('/v1/messages', key, { model: 'ks-quill-1', max_tokens: 100, stream: true, messages: [{ role: 'user', content: '[sim:fail_after=3] [sim:words=10]' }] });
    t.equal(res.status, 200);
    const evs = events(text);
    const names = evs.map(([e]) => e);
    t.equal(names[0], 'message_start');
    t.equal(evs.filter(([e, d]) => e === 'content_block_delta' && d.delta.type === 'text_delta').length, 3, 'three text deltas');
    t.equal(names[names.length - 1], 'error', 'the stream ends with an error event');
    t.notOk(names.includes('message_stop'), 'no message_stop');
    t.notOk(names.includes('message_delta'), 'no message_delta');
    const [, error] = evs[evs.length - 1]!;
    t.same(error, { type: 'error', error: { type: 'api_error', message: 'The model supplier failed to answer.', code: 'upstream_error' } }, 'the messages envelope');
    t.equal(evs[0]![1].message.id, res.headers.get('x-request-id'));
    const row = await rowFor(orgId, res.headers.get('x-request-id')!);
    t.equal(row.outcome, 'incomplete');
    t.equal(row.output_tokens, 3, 'the three words produced, counted locally');
    t.ok(row.input_tokens > 0);
    t.ok(parseMoney(row.charged)! > 0, 'charged for what was produced');
    const org = await organization(gw.url, orgId);
    t.equal(org.held, '0.00', 'the hold settled: nothing left held');
    t.equal(org.open_holds, 0);
    t.equal(parseMoney(org.balance), 10_000_000 - parseMoney(row.charged)!);
  });

  t.test('refusals before the first event are JSON errors in the messages envelope, overloaded_error included', async (t) => {
    const { key, orgId } = await provision(gw.url, { balance: '10.00' });
    const overloaded = await post('/v1/messages', key, { model: 'ks-quill-1', max_tokens: 10, stream: true, messages: [{ role: 'user', content: '[sim:status=529]' }] });
    t.equal(overloaded.res.status, 529);
    t.equal(overloaded.res.headers.get('content-type'), 'application/json');
    t.same(JSON.parse(overloaded.text), { type: 'error', error: { type: 'overloaded_error', message: 'Every supplier of this model is overloaded.', code: 'upstream_overloaded' } });
    const failed = await post('/v1/messages', key, { model: 'ks-quill-1', max_tokens: 10, messages: [{ role: 'user', content: '[sim:status=500]' }] });
    t.equal(failed.res.status, 502);
    t.equal(JSON.parse(failed.text).error.type, 'api_error');
    const invalid = await post('/v1/messages', key, { model: 'ks-quill-1', messages: [{ role: 'user', content: 'x' }] });
    t.equal(invalid.res.status, 400);
    t.same(JSON.parse(invalid.text), { type: 'error', error: { type: 'invalid_request_error', message: JSON.parse(invalid.text).error.message, code: 'invalid_request', param: 'max_tokens' } });
    const ceiling = await post('/v1/messages', key, { model: 'ks-quill-1', max_tokens: 16385, messages: [{ role: 'user', content: 'x' }] });
    t.equal(ceiling.res.status, 400, 'max_tokens above the model\'s max_output_tokens (16384) is refused');
    t.equal(JSON.parse(ceiling.text).error.param, 'max_tokens');
    for (const r of await usageRows(gw.url, orgId)) t.equal(r.charged, '0.00', `${r.outcome}: nothing charged`);
    const org = await organization(gw.url, orgId);
    t.same([org.balance, org.held], ['10.00', '0.00']);
  });

  t.test('a messages body over pools.offload_body_bytes is prepared in the pool: answered, refusals named the same', async (t) => {
    const { key } = await provision(gw.url);
    const long = 'lorem ipsum dolor sit amet '.repeat(2000);
    const ok = await post('/v1/messages', key, { model: 'ks-quill-1', max_tokens: 10, system: long, messages: [{ role: 'user', content: long + ' [sim:words=3]' }] });
    t.ok(ok.text.length > 0 && JSON.stringify({ long }).length > 16384);
    t.equal(ok.res.status, 200, ok.text.slice(0, 200));
    t.equal(JSON.parse(ok.text).content[0].text.split(' ').length, 3);
    const refused = await post('/v1/messages', key, { model: 'ks-quill-1', max_tokens: 10, top_k: -1, messages: [{ role: 'user', content: long }] });
    t.equal(refused.res.status, 400);
    t.equal(JSON.parse(refused.text).error.param, 'top_k');
  });

  t.test('carriers: x-api-key or Bearer on the two messages routes only; Bearer wins when both are present', async (t) => {
    const { key } = await provision(gw.url);
    const body = { model: 'ks-quill-1', max_tokens: 10, messages: [{ role: 'user', content: '[sim:words=2]' }] };
    t.equal((await post('/v1/messages', key, body, 'x-api-key')).res.status, 200);
    t.equal((await post('/v1/messages', key, body, 'bearer')).res.status, 200);
    const both = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'x-api-key': 'tg_sk_wrongwrongwrongwrongwrongwrongwrongwrongxx', 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    t.equal(both.status, 200, 'a disagreeing x-api-key is not read');
    const chat = await post('/v1/chat/completions', key, { model: 'nw-swift-1', messages: [{ role: 'user', content: 'x' }] }, 'x-api-key');
    t.equal(chat.res.status, 401, 'chat does not read x-api-key');
    t.equal(JSON.parse(chat.text).error.type, 'authentication_error');
  });

  t.test('count_tokens leaves the balance, the quota counters and the supplier request counter unchanged', async (t) => {
    const { key, orgId } = await provision(gw.url, { balance: '5.00' });
    await console_(gw.url, 'PATCH', `/organizations/${orgId}`, { quota_per_minute: 2 });
    const before = await organization(gw.url, orgId);
    const simBefore = sim.requestCount();
    const answers = new Set<number>();
    for (let i = 0; i < 6; i++) {
      const { res, text } = await post('/v1/messages/count_tokens', key, { model: 'ks-quill-1', messages: [{ role: 'user', content: 'How long is this?' }] }, i % 2 ? 'bearer' : 'x-api-key');
      t.equal(res.status, 200, text);
      const json = JSON.parse(text);
      t.same(Object.keys(json).sort(), ['estimated', 'input_tokens']);
      t.equal(json.estimated, true);
      answers.add(json.input_tokens);
    }
    t.equal(answers.size, 1, 'deterministic over HTTP');
    t.equal(sim.requestCount(), simBefore, 'no supplier request');
    const after = await organization(gw.url, orgId);
    t.same([after.balance, after.held, after.open_holds], [before.balance, before.held, before.open_holds], 'balance and holds unchanged');
    t.same(await usageRows(gw.url, orgId), [], 'no usage row');
    // The quota is 2 a minute: six counts consumed none of it, so two model calls pass and the third is refused.
    const call = { model: 'ks-quill-1', max_tokens: 10, messages: [{ role: 'user', content: '[sim:words=1]' }] };
    t.equal((await post('/v1/messages', key, call)).res.status, 200, 'first model call admitted');
    t.equal((await post('/v1/messages', key, call)).res.status, 200, 'second model call admitted');
    const third = await post('/v1/messages', key, call);
    t.equal(third.res.status, 429, 'the third is over the quota: the counts used none of it');
    t.equal(JSON.parse(third.text).error.type, 'rate_limit_error');
    t.equal((await post('/v1/messages/count_tokens', key, { model: 'ks-quill-1', messages: call.messages })).res.status, 200, 'and counting is never refused by the quota');
  });

  t.test('count_tokens refuses each generation-only member by name, in the messages envelope', async (t) => {
    const { key } = await provision(gw.url);
    const members: Record<string, unknown> = { max_tokens: 10, stream: true, output_config: {}, stop_sequences: ['x'], temperature: 0.5, top_p: 0.5, top_k: 3 };
    for (const [member, value] of Object.entries(members)) {
      const { res, text } = await post('/v1/messages/count_tokens', key, { model: 'ks-quill-1', messages: [{ role: 'user', content: 'x' }], [member]: value });
      t.equal(res.status, 400, member);
      const body = JSON.parse(text);
      t.equal(body.type, 'error');
      t.equal(body.error.param, member, `${member} named`);
    }
    const unknown = await post('/v1/messages/count_tokens', key, { model: 'nw-swift-1', messages: [{ role: 'user', content: 'x' }] });
    t.equal(unknown.res.status, 404, 'a model not served on messages');
    const scoped = await provision(gw.url, { scope: { modality_codes: ['embeddings'] } });
    t.equal((await post('/v1/messages/count_tokens', scoped.key, { model: 'ks-quill-1', messages: [{ role: 'user', content: 'x' }] })).res.status, 403, 'outside the key\'s scope');
    t.equal((await post('/v1/messages/count_tokens', 'tg_sk_nope', { model: 'ks-quill-1', messages: [] })).res.status, 401);
  });

  t.test('count_tokens of a 1 MB conversation runs in the pool: small calls beside it are not held up', async (t) => {
    const { key } = await provision(gw.url);
    const turn = 'the quick brown fox jumps over the lazy dog '.repeat(45);
    const messages = Array.from({ length: 520 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: turn }));
    const big = JSON.stringify({ model: 'ks-quill-1', messages });
    t.ok(big.length > 1_000_000, `${big.length} bytes`);
    const small = { model: 'ks-quill-1', messages: [{ role: 'user', content: 'hi' }] };
    const warm = await post('/v1/messages/count_tokens', key, small);
    t.equal(warm.res.status, 200);
    const startedAt = performance.now();
    const bigCall = post('/v1/messages/count_tokens', key, big).then((r) => ({ ...r, ms: performance.now() - startedAt }));
    await new Promise((r) => setTimeout(r, 20));
    const smallMs: number[] = [];
    for (let i = 0; i < 5; i++) {
      const at = performance.now();
      const models = await fetch(`${gw.url}/v1/models`);
      await models.text();
      smallMs.push(performance.now() - at);
    }
    const done = await bigCall;
    t.equal(done.res.status, 200, done.text.slice(0, 200));
    const tokens = JSON.parse(done.text).input_tokens;
    t.ok(tokens > 100_000, `${tokens} tokens estimated`);
    const slowest = Math.max(...smallMs);
    t.ok(slowest < 50, `small requests while the 1 MB count ran (${done.ms.toFixed(0)} ms): slowest ${slowest.toFixed(1)} ms`);
  });
}
