// POST /v1/responses through the official `openai` SDK, unchanged, against a
// real gateway over real HTTP (the simulator's openai-compatible instances as
// the suppliers). Every streamed test checks sequence_number: from 0, rising
// by exactly one on every event, and exactly one terminal event.
import OpenAI from 'openai';
import t, { type Test } from 'tap';
import { startSimulator } from '../../src/simulator/index.js';
import { startGateway } from '../helpers/gateway.js';
import { ADMIN_TOKEN, provision } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';

const TERMINAL = new Set(['response.completed', 'response.failed']);

/** Sequence numbers 0, 1, 2, … and exactly one terminal event, the last. */
function checkGrammar(t: Test, events: Array<{ type: string; sequence_number: number }>): void {
  t.same(events.map((e) => e.sequence_number), events.map((_, i) => i), `sequence_number gap-free from 0 over ${events.length} events`);
  t.equal(events.filter((e) => TERMINAL.has(e.type)).length, 1, 'exactly one terminal event');
  t.ok(TERMINAL.has(events[events.length - 1]!.type), 'the terminal event is the last');
}

/**
 * Without what the SDK's helper adds on its own (output_text, output_parsed,
 * parsed_arguments, a content part's parsed) and what differs on every call
 * by nature (the response's id and time, the supplier's item and call ids,
 * its encrypted reasoning record).
 */
function comparable(r: any): any {
  const { id: _id, created_at: _created, output_text: _text, output_parsed: _parsed, ...rest } = r;
  return {
    ...rest,
    output: rest.output.map(({ parsed_arguments: _p, id: _i, call_id: _c, encrypted_content: enc, ...item }: any) => ({
      ...item,
      ...(enc === undefined ? {} : { encrypted_content: typeof enc }),
      ...(item.content === undefined ? {} : { content: item.content.map(({ parsed: _q, ...part }: any) => part) }),
    })),
  };
}


const db = await testDatabase(t);
if (db !== null) {
  const sim = await startSimulator({ instances: ['alpha', 'beta', 'gamma'] });
  const bodies: string[] = [];
  sim.on((e) => {
    if (e.type === 'request' && e.protocol === 'responses' && e.body !== undefined) bodies.push(e.body);
  });
  const gw = await startGateway({ env: { DATABASE_URL: db, SIMULATOR_URL: sim.url, ADMIN_TOKEN }, workers: 2 });
  t.teardown(async () => {
    await gw.stop();
    await sim.close();
  });
  const { key } = await provision(gw.url, { balance: '50.00' });
  const client = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  const lastSent = () => JSON.parse(bodies[bodies.length - 1]!);
  const tools: OpenAI.Responses.Tool[] = [
    { type: 'function', name: 'get_weather', description: 'Current weather', parameters: { type: 'object', properties: { city: { type: 'string' } } }, strict: false },
  ];

  t.test('responses.create unary: the gateway\'s id, the model as named, output and usage in the responses vocabulary', async (t) => {
    const { data: reply, response } = await client.responses
      .create({ model: 'swift', instructions: 'Be terse.', input: 'Say hello [sim:words=5]' })
      .withResponse();
    t.equal(reply.id, response.headers.get('x-request-id'), 'id is the service request identity');
    t.same([reply.object, reply.model, reply.status], ['response', 'swift', 'completed'], 'the alias echoed as sent');
    t.ok(Number.isInteger(reply.created_at) && Math.abs(reply.created_at - Date.now() / 1000) < 60, 'created_at in whole seconds');
    t.equal(reply.output.length, 1);
    t.equal(reply.output[0]!.type, 'message');
    t.equal(reply.output_text.split(' ').length, 5);
    t.same(Object.keys(reply.usage!).sort(), ['input_tokens', 'input_tokens_details', 'output_tokens', 'output_tokens_details', 'total_tokens']);
    t.equal(reply.usage!.output_tokens, 5);
    t.equal(reply.usage!.total_tokens, reply.usage!.input_tokens + 5);
    const sent = lastSent();
    t.same([sent.model, sent.max_output_tokens, sent.store], ['swift-1-upstream', 32768, false], 'upstream: the upstream model, the default bound, store false');
    t.same(sent.input, [{ type: 'message', role: 'system', content: 'Be terse.' }, { type: 'message', role: 'user', content: 'Say hello [sim:words=5]' }], 'instructions became the leading system turn');
    t.notOk('instructions' in sent);
  });

  t.test('streaming: responses.create({stream: true}) — the grammar, same id and model on every snapshot, usage on the terminal one', async (t) => {
    const stream = await client.responses.create({ model: 'nw-swift-1', input: 'Count [sim:words=7]', stream: true });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const e of stream) events.push(e);
    checkGrammar(t, events);
    const types = events.map((e) => e.type);
    t.same(types, [
      'response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added',
      ...Array(7).fill('response.output_text.delta'), 'response.output_text.done',
      'response.content_part.done', 'response.output_item.done', 'response.completed',
    ]);
    const created = (events[0] as OpenAI.Responses.ResponseCreatedEvent).response;
    const completed = (events[events.length - 1] as OpenAI.Responses.ResponseCompletedEvent).response;
    t.equal(created.status, 'in_progress');
    t.same([completed.id, completed.model], [created.id, 'nw-swift-1'], 'the same id and model');
    t.equal(completed.status, 'completed');
    t.equal(completed.usage!.output_tokens, 7, 'the settled usage');
  });

  t.test('the responses.stream() helper\'s final response equals the unary answer', async (t) => {
    for (const directive of ['[sim:words=9]', '[sim:tool=get_weather]', '[sim:reasoning] [sim:words=3]']) {
      const params = { model: 'nw-swift-1', tools, input: `Go ${directive}`, include: ['reasoning.encrypted_content' as const] };
      const unary = await client.responses.create(params);
      const stream = client.responses.stream(params);
      const events: any[] = [];
      stream.on('event', (e) => events.push(e));
      const final = await stream.finalResponse();
      checkGrammar(t, events);
      t.not(final.id, unary.id, 'each call its own id');
      const u = comparable(unary);
      const f = comparable(final);
      t.same(f, u, `${directive}: output, status and usage all equal`);
    }
  });

  t.test('a function-call round trip: function_call → function_call_output → answer', async (t) => {
    const first = await client.responses.create({ model: 'nw-swift-1', tools, tool_choice: { type: 'function', name: 'get_weather' }, input: 'Weather in Oslo? [sim:tool=get_weather]' });
    t.equal(first.status, 'completed');
    const call = first.output.find((i): i is OpenAI.Responses.ResponseFunctionToolCall => i.type === 'function_call')!;
    t.equal(call.name, 'get_weather');
    t.same(JSON.parse(call.arguments), { sim: true });
    t.match(call.call_id, /^call_/);
    const second = await client.responses.create({
      model: 'nw-swift-1',
      tools,
      input: [
        { role: 'user', content: 'Weather in Oslo?' },
        call,
        { type: 'function_call_output', call_id: call.call_id, output: '3°C' },
        { role: 'developer', content: 'Answer briefly.' },
        { role: 'user', content: 'thanks [sim:words=4]' },
      ],
    });
    t.equal(second.output_text.split(' ').length, 4);
    const sent = lastSent();
    t.same(sent.input.map((i: any) => i.type ?? i.role), ['user', 'function_call', 'function_call_output', 'system', 'user'], 'items in order, the developer turn carried as system');
    t.same(sent.input[1], { id: call.id, type: 'function_call', status: call.status, arguments: call.arguments, call_id: call.call_id, name: 'get_weather' }, 'the replayed call carried as stated');
    t.same(sent.input[3], { role: 'system', content: 'Answer briefly.' });
  });

  t.test('every output item type the supplier returns: custom_tool_call, web_search_call, reasoning (include forwarded)', async (t) => {
    const more: OpenAI.Responses.Tool[] = [{ type: 'custom', name: 'patch', description: 'apply a patch' }, { type: 'web_search' }];
    const custom = await client.responses.create({ model: 'nw-swift-1', tools: more, input: 'Fix it [sim:tool=patch]' });
    t.same(custom.output.map((i) => i.type), ['custom_tool_call']);
    t.equal((custom.output[0] as any).input, '{"sim":true}');
    const searched = await client.responses.create({ model: 'nw-swift-1', tools: more, include: ['reasoning.encrypted_content', 'web_search_call.action.sources'], input: 'Find it [sim:reasoning] [sim:tool=web_search] [sim:words=2]' });
    t.same(searched.output.map((i) => i.type), ['reasoning', 'web_search_call', 'message']);
    t.match(searched.output[0], { type: 'reasoning', summary: [{ type: 'summary_text', text: 'thinking it over' }], encrypted_content: /^enc_/ });
    t.match(searched.output[1], { type: 'web_search_call', status: 'completed', action: { type: 'search' } });
    t.equal(searched.usage!.output_tokens_details.reasoning_tokens, 3);
    t.same(lastSent().include, ['reasoning.encrypted_content'], 'only reasoning.encrypted_content is forwarded');
    const streamed = await client.responses.create({ model: 'nw-swift-1', tools: more, input: 'Find it [sim:tool=web_search] [sim:words=2]', stream: true });
    const events: any[] = [];
    for await (const e of streamed) events.push(e);
    checkGrammar(t, events);
    const searches = events.filter((e) => e.type.startsWith('response.web_search_call.'));
    t.same(searches.map((e) => [e.type, e.item.status]), [
      ['response.web_search_call.in_progress', 'in_progress'], ['response.web_search_call.searching', 'searching'], ['response.web_search_call.completed', 'completed'],
    ], 'the three search events, each with the item\'s search status');
    const custom2 = await client.responses.create({ model: 'nw-swift-1', tools: more, input: 'Fix it [sim:tool=patch]', stream: true });
    const cevents: any[] = [];
    for await (const e of custom2) cevents.push(e);
    checkGrammar(t, cevents);
    t.equal(cevents.filter((e) => e.type === 'response.custom_tool_call_input.delta').map((e) => e.delta).join(''), '{"sim":true}');
  });

  t.test('the output bound: status incomplete with the reason, unary and on response.completed', async (t) => {
    const unary = await client.responses.create({ model: 'nw-swift-1', max_output_tokens: 4, input: '[sim:words=10]' });
    t.same([unary.status, unary.incomplete_details], ['incomplete', { reason: 'max_output_tokens' }]);
    t.equal(unary.usage!.output_tokens, 4);
    t.equal(lastSent().max_output_tokens, 4);
    const stream = await client.responses.create({ model: 'nw-swift-1', max_output_tokens: 4, input: '[sim:words=10]', stream: true });
    const events: any[] = [];
    for await (const e of stream) events.push(e);
    checkGrammar(t, events);
    t.equal(events[events.length - 1].type, 'response.completed');
    t.same([events[events.length - 1].response.status, events[events.length - 1].response.incomplete_details], ['incomplete', { reason: 'max_output_tokens' }]);
  });

  t.test('members accepted with no effect are not forwarded; text.format is', async (t) => {
    await client.responses.create({
      model: 'nw-swift-1', input: 'x [sim:words=1]', store: false, parallel_tool_calls: false, reasoning: { effort: 'low' }, prompt_cache_key: 'k',
      text: { format: { type: 'json_object' }, verbosity: 'low' }, include: ['file_search_call.results'],
      ...({ client_metadata: { app: 'x' } } as object),
    });
    const sent = lastSent();
    for (const m of ['parallel_tool_calls', 'reasoning', 'prompt_cache_key', 'client_metadata', 'include', 'previous_response_id']) t.notOk(m in sent, `${m} not forwarded`);
    t.same(sent.text, { format: { type: 'json_object' } }, 'text.format forwarded, verbosity not');
    t.equal(sent.store, false);
  });

  t.test('SDK error classes in the responses envelope: 401, 400 naming the member, 404', async (t) => {
    const bad = new OpenAI({ apiKey: 'tg_sk_notakeynotakeynotakeynotakeynotakeyxxxx', baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const e401 = await bad.responses.create({ model: 'nw-swift-1', input: 'x' }).catch((e) => e);
    t.ok(e401 instanceof OpenAI.AuthenticationError);
    const e400 = await client.responses.create({ model: 'nw-swift-1', input: 'x', max_output_tokens: 0 }).catch((e) => e);
    t.ok(e400 instanceof OpenAI.BadRequestError);
    t.same(Object.keys(e400.error).sort(), ['code', 'message', 'param', 'type']);
    t.equal(e400.error.param, 'max_output_tokens');
    const e404 = await client.responses.create({ model: 'ks-quill-1', input: 'x' }).catch((e) => e);
    t.ok(e404 instanceof OpenAI.NotFoundError, 'a model not served on responses');
  });
}
