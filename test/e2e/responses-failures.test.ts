// /v1/responses when things go wrong, over real HTTP on a real gateway
// (PostgreSQL store, embedded ledger, the simulator), money checked on every
// path; previous_response_id ownership; every refusal rule by name.
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import t from 'tap';
import { parseMoney } from '../../src/money/money.js';
import { startSimulator, type SimulatorEvent } from '../../src/simulator/index.js';
import { freePort, startGateway } from '../helpers/gateway.js';
import { ADMIN_TOKEN, organization, provision, usageRows } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';

/** Parses SSE text into its events' data (the event name is the data's type). */
function events(text: string): any[] {
  return text
    .split('\n\n')
    .filter((f) => f.startsWith('event: '))
    .map((f) => {
      const [ev, data] = f.split('\n');
      const json = JSON.parse(data!.slice('data: '.length));
      if (ev!.slice('event: '.length) !== json.type) throw new Error(`event name ${ev} is not the type ${json.type}`);
      return json;
    });
}

const TERMINAL = new Set(['response.completed', 'response.failed']);

function terminals(evs: any[]): string[] {
  return evs.filter((e) => TERMINAL.has(e.type)).map((e) => e.type);
}

function gapFree(evs: any[]): boolean {
  return evs.every((e, i) => e.sequence_number === i);
}

/**
 * A supplier that misbehaves on purpose, in ways the simulator does not:
 * it opens a stream and then ends the body cleanly without a terminal
 * event, or sends two terminal events, or its own response.failed.
 */
function misbehavingSupplier(port: number): Promise<Server> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const mode = /\[bad:(\w+)\]/.exec(body)?.[1] ?? 'no_terminal';
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const send = (type: string, rest: object) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: 99, ...rest })}\n\n`);
      const response = { id: 'resp_up', object: 'response', created_at: 1, status: 'in_progress', model: 'up', output: [] };
      const item = { id: 'msg_up', type: 'message', status: 'in_progress', role: 'assistant', content: [] };
      send('response.created', { response });
      send('response.output_item.added', { output_index: 0, item });
      send('response.content_part.added', { item_id: 'msg_up', output_index: 0, content_index: 0, part: { type: 'output_text', text: '' } });
      send('response.output_text.delta', { item_id: 'msg_up', output_index: 0, content_index: 0, delta: 'the quick' });
      const usage = { input_tokens: 5, output_tokens: 2, total_tokens: 7 };
      if (mode === 'twice') {
        const done = { ...response, status: 'completed', usage, output: [{ ...item, status: 'completed', content: [{ type: 'output_text', text: 'the quick' }] }] };
        send('response.completed', { response: done });
        send('response.completed', { response: done });
      } else if (mode === 'failed') {
        send('response.failed', { response: { ...response, status: 'failed', error: { code: 'server_error', message: 'upstream secret detail' } } });
      } else if (mode === 'big') {
        // One oversized delta (4 MB), then the body ends with no terminal event.
        send('response.output_text.delta', { item_id: 'msg_up', output_index: 0, content_index: 0, delta: 'x'.repeat(4 << 20) });
      }
      res.end();
    });
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}


const db = await testDatabase(t);
const badDb = db === null ? null : await testDatabase(t);
if (db !== null && badDb !== null) {
  const sim = await startSimulator({ instances: ['alpha', 'beta', 'gamma'] });
  const simEvents: SimulatorEvent[] = [];
  sim.on((e) => simEvents.push(e));
  const gw = await startGateway({ env: { DATABASE_URL: db, SIMULATOR_URL: sim.url, ADMIN_TOKEN, BILLING_FLUSH_MS: '0' }, workers: 2 });
  const badPort = await freePort();
  const bad = await misbehavingSupplier(badPort);
  const badGw = await startGateway({ env: { DATABASE_URL: badDb, SIMULATOR_URL: `http://127.0.0.1:${badPort}`, ADMIN_TOKEN, BILLING_FLUSH_MS: '0' } });
  t.teardown(async () => {
    await gw.stop();
    await badGw.stop();
    await sim.close();
    await new Promise((r) => bad.close(r));
  });

  const post = async (base: string, key: string, body: unknown) => {
    const res = await fetch(`${base}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
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

  async function rowFor(base: string, orgId: string, requestId: string): Promise<any> {
    for (let i = 0; i < 50; i++) {
      const row = (await usageRows(base, orgId)).find((r) => r.request_id === requestId);
      if (row) return row;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`no usage row for ${requestId}`);
  }

  t.test('[sim:fail_after=3]: exactly one terminal event, response.failed, the row incomplete, the hold settled', async (t) => {
    const { key, orgId } = await provision(gw.url, { balance: '10.00' });
    const { res, text } = await post(gw.url, key, { model: 'nw-swift-1', stream: true, input: '[sim:fail_after=3] [sim:words=10]' });
    t.equal(res.status, 200);
    const evs = events(text);
    t.ok(gapFree(evs), 'sequence_number gap-free from 0');
    t.equal(evs.filter((e) => e.type === 'response.output_text.delta').length, 3);
    t.same(terminals(evs), ['response.failed'], 'one terminal event: response.failed');
    const failed = evs[evs.length - 1];
    t.equal(failed.type, 'response.failed');
    t.same([failed.response.id, failed.response.model, failed.response.status], [res.headers.get('x-request-id'), 'nw-swift-1', 'failed']);
    t.same(failed.response.error, { code: 'upstream_error', message: 'The model supplier failed to answer.', type: 'api_error' });
    t.equal(evs[0].response.id, failed.response.id, 'the same id on every snapshot');
    const row = await rowFor(gw.url, orgId, res.headers.get('x-request-id')!);
    t.equal(row.outcome, 'incomplete');
    t.equal(row.output_tokens, 3, 'the three words produced, counted locally');
    const org = await organization(gw.url, orgId);
    t.same([org.held, org.open_holds], ['0.00', 0], 'the hold settled');
    t.equal(parseMoney(org.balance), 10_000_000 - parseMoney(row.charged)!);
  });

  t.test('a supplier that ends its stream without a terminal event (cleanly, or after 4 MB in one event): one response.failed', async (t) => {
    const { key, orgId } = await provision(badGw.url, { balance: '10.00' });
    for (const mode of ['no_terminal', 'big']) {
      const { res, text } = await post(badGw.url, key, { model: 'nw-swift-1', stream: true, input: `[bad:${mode}]` });
      t.equal(res.status, 200);
      const evs = events(text);
      t.ok(gapFree(evs), `${mode}: sequence_number gap-free from 0 (the supplier's 99s never passed on)`);
      t.same(terminals(evs), ['response.failed'], `${mode}: one terminal event, response.failed`);
      t.equal(evs[evs.length - 1].type, 'response.failed');
      const row = await rowFor(badGw.url, orgId, res.headers.get('x-request-id')!);
      t.equal(row.outcome, 'incomplete', `${mode}: row incomplete`);
    }
    const org = await organization(badGw.url, orgId);
    t.same([org.held, org.open_holds], ['0.00', 0]);
  });

  t.test('a supplier that sends two terminal events, or its own response.failed: still exactly one, ours', async (t) => {
    const { key } = await provision(badGw.url);
    const twice = events((await post(badGw.url, key, { model: 'nw-swift-1', stream: true, input: '[bad:twice]' })).text);
    t.ok(gapFree(twice));
    t.same(terminals(twice), ['response.completed']);
    t.equal(twice[twice.length - 1].response.usage.output_tokens, 2, 'the supplier\'s usage, settled');
    const failed = (await post(badGw.url, key, { model: 'nw-swift-1', stream: true, input: '[bad:failed]' })).text;
    t.notMatch(failed, /upstream secret detail/, 'the supplier\'s error text is not passed on');
    const evs = events(failed);
    t.ok(gapFree(evs));
    t.same(terminals(evs), ['response.failed']);
  });

  t.test('a client cancel: no terminal event, the hold released, the usage row cancelled', async (t) => {
    const { key, orgId } = await provision(gw.url, { balance: '10.00' });
    const ac = new AbortController();
    const res = await fetch(`${gw.url}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'au-atlas-2', stream: true, input: '[sim:words=1000] [sim:delay_ms=20]' }),
      signal: ac.signal,
    });
    const rid = res.headers.get('x-request-id')!;
    const reader = res.body!.getReader();
    let text = '';
    while ((text.match(/output_text\.delta/g) ?? []).length < 6) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the stream ended early (${res.status}): ${text.slice(0, 300)}`);
      text += Buffer.from(value).toString();
    }
    const before = simEvents.length;
    ac.abort();
    t.same(terminals(events(text.slice(0, text.lastIndexOf('\n\n') + 2))), [], 'no terminal event before the cancel');
    let aborted: SimulatorEvent | undefined;
    for (let i = 0; i < 40 && aborted === undefined; i++) {
      await new Promise((r) => setTimeout(r, 10));
      aborted = simEvents.slice(before).find((e) => e.type === 'aborted');
    }
    t.ok(aborted, 'the upstream request was closed');
    const row = await rowFor(gw.url, orgId, rid);
    t.equal(row.outcome, 'cancelled');
    t.ok(row.output_tokens >= 3, 'charged for what was produced');
    const org = await organization(gw.url, orgId);
    t.same([org.held, org.open_holds], ['0.00', 0], 'the hold released');
  });

  t.test('a slow reader: sequence numbers still gap-free from 0, one terminal event', async (t) => {
    const { key } = await provision(gw.url);
    const body = JSON.stringify({ model: 'au-atlas-2', stream: true, max_output_tokens: 30000, input: '[sim:words=30000]' });
    const socket = connect(gw.port, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    const chunks: Buffer[] = [];
    socket.on('data', (c) => chunks.push(c));
    socket.write(`POST /v1/responses HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    await new Promise((r) => socket.once('data', r));
    socket.pause(); // the kernel buffers fill, uWS reports backpressure, the gateway waits
    await new Promise((r) => setTimeout(r, 1500));
    socket.resume();
    await new Promise((r) => socket.once('close', r));
    const raw = Buffer.concat(chunks).toString('utf8');
    // Chunked transfer encoding (all ASCII here): reassemble the body from its chunks.
    let at = raw.indexOf('\r\n\r\n') + 4;
    let sse = '';
    for (;;) {
      const nl = raw.indexOf('\r\n', at);
      const size = parseInt(raw.slice(at, nl), 16);
      if (!(size > 0)) break;
      sse += raw.slice(nl + 2, nl + 2 + size);
      at = nl + 2 + size + 2;
    }
    const evs = events(sse);
    t.equal(evs.filter((e) => e.type === 'response.output_text.delta').length, 30000);
    t.ok(gapFree(evs), `sequence_number gap-free from 0 over ${evs.length} events`);
    t.same(terminals(evs), ['response.completed']);
  });

  t.test('a failure before the first event is a JSON error in the responses envelope', async (t) => {
    const { key, orgId } = await provision(gw.url, { balance: '10.00' });
    const { res, text } = await post(gw.url, key, { model: 'nw-swift-1', stream: true, input: '[sim:status=500]' });
    t.equal(res.status, 502);
    t.equal(res.headers.get('content-type'), 'application/json');
    t.same(JSON.parse(text), { error: { message: 'The model supplier failed to answer.', type: 'api_error', param: null, code: 'upstream_error' } });
    const row = await rowFor(gw.url, orgId, res.headers.get('x-request-id')!);
    t.same([row.outcome, row.charged], ['failed', '0.00']);
    t.equal((await organization(gw.url, orgId)).held, '0.00');
  });

  t.test('previous_response_id: one\'s own accepted and never sent upstream; another organization\'s or an unknown one refused by name', async (t) => {
    const mine = await provision(gw.url);
    const theirs = await provision(gw.url);
    const first = JSON.parse((await post(gw.url, mine.key, { model: 'nw-swift-1', input: 'hello [sim:words=2]' })).text);
    const streamed = events((await post(gw.url, theirs.key, { model: 'nw-swift-1', stream: true, input: 'hello [sim:words=2]' })).text);
    const theirId = streamed[streamed.length - 1].response.id;
    let sent: string | undefined;
    const off = sim.on((e) => {
      if (e.type === 'request' && e.protocol === 'responses') sent = e.body;
    });
    // Two workers: the continuation may land on the one that did not record the id (a cache miss asks the store).
    for (let i = 0; i < 4; i++) {
      const { res, text } = await post(gw.url, mine.key, { model: 'nw-swift-1', previous_response_id: first.id, input: 'go on [sim:words=3]' });
      t.equal(res.status, 200, text.slice(0, 200));
      t.equal(JSON.parse(text).output[0].content[0].text.split(' ').length, 3);
      t.notMatch(sent!, first.id, 'the supplier\'s request does not carry the earlier response id');
      const upstream = JSON.parse(sent!);
      t.notOk('previous_response_id' in upstream);
      t.equal(upstream.input, 'go on [sim:words=3]', 'no earlier turn added as context');
    }
    off();
    for (const [what, id] of [['another organization\'s', theirId], ['an unknown', 'req_doesnotexist']]) {
      const before = sim.requestCount();
      const { res, text } = await post(gw.url, mine.key, { model: 'nw-swift-1', previous_response_id: id, input: 'x' });
      t.equal(res.status, 400, what);
      t.same(JSON.parse(text).error, { message: JSON.parse(text).error.message, type: 'invalid_request_error', param: 'previous_response_id', code: 'invalid_request' }, `${what}: refused by name`);
      t.equal(sim.requestCount(), before, `${what}: no supplier call`);
    }
    t.equal((await usageRows(gw.url, mine.orgId)).length, 5, 'the refusals reserved nothing (no usage row), the five answers one each');
  });

  t.test('every refusal rule of the responses table, by name', async (t) => {
    const { key } = await provision(gw.url);
    const ok = { model: 'nw-swift-1', input: 'x' };
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['max_output_tokens 0', { max_output_tokens: 0 }, 'max_output_tokens'],
      ['max_output_tokens past 2^53', { max_output_tokens: 1e300 }, 'max_output_tokens'],
      ['max_output_tokens above the model\'s', { max_output_tokens: 32769 }, 'max_output_tokens'],
      ['store true', { store: true }, 'store'],
      ['no input', { input: undefined }, 'input'],
      ['an empty input', { input: '' }, 'input'],
      ['no model', { model: undefined }, 'model'],
      ['a member outside the table', { conversation: 'c' }, 'conversation'],
      ['background true (nothing runs after the call)', { background: true }, 'background'],
      ['an input item type outside the list', { input: [{ type: 'image_generation_call' }] }, 'input[0].type'],
      ['an input item member outside the list', { input: [{ role: 'user', content: 'x', cache: true }] }, 'input[0].cache'],
      ['an input role outside the list', { input: [{ role: 'tool', content: 'x' }] }, 'input[0].role'],
      ['a function_call_output without its call', { input: [{ type: 'function_call_output', output: 'x' }] }, 'input[0].call_id'],
      ['a tool type outside the list', { tools: [{ type: 'file_search' }] }, 'tools[0].type'],
      ['a function tool without a name', { tools: [{ type: 'function' }] }, 'tools[0].name'],
      ['two tools of one name', { tools: [{ type: 'function', name: 'a' }, { type: 'custom', name: 'a' }] }, 'tools[1].name'],
      ['tool_choice naming an undeclared tool', { tools: [{ type: 'function', name: 'a' }], tool_choice: { type: 'function', name: 'b' } }, 'tool_choice.name'],
      ['tool_choice of the wrong type', { tools: [{ type: 'function', name: 'a' }], tool_choice: { type: 'custom', name: 'a' } }, 'tool_choice.name'],
      ['tool_choice an unknown word', { tool_choice: 'any' }, 'tool_choice'],
      ['text.verbosity outside the list', { text: { verbosity: 'loud' } }, 'text.verbosity'],
      ['include not a list', { include: 'reasoning.encrypted_content' }, 'include'],
      ['previous_response_id empty', { previous_response_id: '' }, 'previous_response_id'],
    ];
    for (const [what, change, param] of cases) {
      const { res, text } = await post(gw.url, key, { ...ok, ...change });
      t.equal(res.status, 400, what);
      const body = JSON.parse(text);
      t.equal(body.error.type, 'invalid_request_error', what);
      t.equal(body.error.param, param, `${what}: names ${param}`);
    }
    t.equal((await post(gw.url, key, '{"model":')).res.status, 400, 'invalid JSON');
    t.equal((await post(gw.url, 'tg_sk_nope', ok)).res.status, 401);
    const messagesCarrier = await fetch(`${gw.url}/v1/responses`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify(ok) });
    t.equal(messagesCarrier.status, 401, 'Bearer only: x-api-key is not read');
  });

  t.test('a body over pools.offload_body_bytes is prepared in the pool: answered, refusals named the same', async (t) => {
    const { key } = await provision(gw.url);
    const long = 'lorem ipsum dolor sit amet '.repeat(2000);
    const ok = await post(gw.url, key, { model: 'nw-swift-1', instructions: long, input: [{ role: 'developer', content: long }, { role: 'user', content: long + ' [sim:words=3]' }] });
    t.equal(ok.res.status, 200, ok.text.slice(0, 200));
    t.equal(JSON.parse(ok.text).output[0].content[0].text.split(' ').length, 3);
    const refused = await post(gw.url, key, { model: 'nw-swift-1', store: true, input: long });
    t.equal(refused.res.status, 400);
    t.equal(JSON.parse(refused.text).error.param, 'store');
  });
}
