// POST /v1/messages and /v1/messages/count_tokens through the official
// `@anthropic-ai/sdk`, unchanged, against a real gateway over real HTTP (the
// simulator's anthropic-compatible instance as the supplier): once with
// `apiKey` (x-api-key) and once with `authToken` (Authorization: Bearer).
import Anthropic from '@anthropic-ai/sdk';
import t from 'tap';
import { startSimulator } from '../../src/simulator/index.js';
import { startGateway } from '../helpers/gateway.js';
import { ADMIN_TOKEN, provision } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';

const db = await testDatabase(t);
if (db !== null) {
  const sim = await startSimulator({ instances: ['alpha', 'beta', 'gamma'] });
  const bodies: string[] = [];
  sim.on((e) => {
    if (e.type === 'request' && e.protocol === 'native_messages' && e.body !== undefined) bodies.push(e.body);
  });
  const gw = await startGateway({ env: { DATABASE_URL: db, SIMULATOR_URL: sim.url, ADMIN_TOKEN } });
  t.teardown(async () => {
    await gw.stop();
    await sim.close();
  });
  const { key } = await provision(gw.url, { balance: '50.00' });
  const carriers: Array<[string, Anthropic]> = [
    ['apiKey (x-api-key)', new Anthropic({ apiKey: key, baseURL: gw.url, maxRetries: 0 })],
    ['authToken (Bearer)', new Anthropic({ authToken: key, apiKey: null, baseURL: gw.url, maxRetries: 0 })],
  ];
  const tools: Anthropic.Tool[] = [{ name: 'get_weather', description: 'Current weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }];

  for (const [carrier, client] of carriers) {
    t.test(`${carrier}: messages.create unary — the gateway's id, the model as named, usage as settled`, async (t) => {
      const { data: reply, response } = await client.messages
        .create({ model: 'quill', max_tokens: 64, system: 'Be terse.', messages: [{ role: 'user', content: 'Say hello [sim:words=5]' }] })
        .withResponse();
      t.equal(reply.id, response.headers.get('x-request-id'), 'id is the service request identity');
      t.same([reply.type, reply.role, reply.model, reply.stop_reason], ['message', 'assistant', 'quill', 'end_turn'], 'the alias echoed as sent');
      t.equal(reply.content.length, 1);
      t.equal(reply.content[0].type, 'text');
      t.equal((reply.content[0] as Anthropic.TextBlock).text.trim().split(/\s+/).length, 5);
      t.same(Object.keys(reply.usage).sort(), ['cache_creation_input_tokens', 'cache_read_input_tokens', 'input_tokens', 'output_tokens']);
      t.equal(reply.usage.output_tokens, 5);
      t.ok(reply.usage.input_tokens > 0);
      const sent = JSON.parse(bodies[bodies.length - 1]!);
      t.same([sent.model, sent.max_tokens, sent.system], ['quill-1', 64, 'Be terse.'], 'upstream: the upstream model, the reserved bound, the system prompt as its own member');
    });

    t.test(`${carrier}: streaming — the stream helper's final message equals the unary answer`, async (t) => {
      const params = { model: 'ks-quill-1', max_tokens: 64, messages: [{ role: 'user' as const, content: 'Count [sim:words=7]' }] };
      const unary = await client.messages.create(params);
      const stream = client.messages.stream(params);
      const seen: string[] = [];
      stream.on('streamEvent', (ev) => seen.push(ev.type));
      const final = await stream.finalMessage();
      const { id: _u, ...unaryRest } = unary;
      // parsed_output is the helper's own addition (structured outputs), not part of the reply.
      const { id: streamId, parsed_output: _parsed, ...finalRest } = final as any;
      t.match(streamId, /^req_/);
      t.not(streamId, unary.id, 'each call its own id');
      t.same(finalRest, unaryRest, 'content, stop_reason, stop_sequence, model, role, type and usage all equal');
      t.equal(seen[0], 'message_start');
      t.equal(seen[seen.length - 1], 'message_stop');
      t.ok(seen.includes('content_block_delta') && seen.includes('message_delta'));
    });

    t.test(`${carrier}: a tool round trip`, async (t) => {
      const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Weather in Oslo? [sim:tool=get_weather]' }];
      const first = await client.messages.create({ model: 'ks-quill-1', max_tokens: 256, tools, tool_choice: { type: 'auto' }, messages });
      t.equal(first.stop_reason, 'tool_use');
      const use = first.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')!;
      t.equal(use.name, 'get_weather');
      t.same(use.input, { sim: true }, 'input is an object');
      messages.push({ role: 'assistant', content: first.content });
      messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '3°C' }, { type: 'text', text: 'thanks [sim:words=4]' }] });
      const second = await client.messages.create({ model: 'ks-quill-1', max_tokens: 256, tools, messages });
      t.equal(second.stop_reason, 'end_turn');
      t.equal((second.content[0] as Anthropic.TextBlock).text.trim().split(/\s+/).length, 4);
      // Streamed, the tool call arrives as input_json_delta fragments and the helper assembles the object.
      const streamed = await client.messages.stream({ model: 'ks-quill-1', max_tokens: 256, tools, messages: messages.slice(0, 1) }).finalMessage();
      t.same((streamed.content[0] as Anthropic.ToolUseBlock).input, { sim: true });
    });

    t.test(`${carrier}: messages.countTokens — an estimate, no supplier call`, async (t) => {
      const before = sim.requestCount();
      const counted = await client.messages.countTokens({ model: 'ks-quill-1', system: 'Be terse.', tools, messages: [{ role: 'user', content: 'How many tokens is this?' }] });
      t.ok(counted.input_tokens > 0);
      t.equal((counted as any).estimated, true);
      t.equal(sim.requestCount(), before, 'the supplier was not called');
      const more = await client.messages.countTokens({ model: 'ks-quill-1', system: 'Be terse.', tools, messages: [{ role: 'user', content: 'How many tokens is this? And this?' }] });
      t.ok(more.input_tokens > counted.input_tokens, 'more text, more tokens');
    });
  }

  t.test('SDK error classes in the messages envelope: 401, 400 with the member named, 404', async (t) => {
    const bad = new Anthropic({ apiKey: 'tg_sk_notakeynotakeynotakeynotakeynotakeyxxxx', baseURL: gw.url, maxRetries: 0 });
    const e401 = await bad.messages.create({ model: 'ks-quill-1', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    t.ok(e401 instanceof Anthropic.AuthenticationError, 'AuthenticationError');
    t.equal(e401.error.type, 'error');
    t.equal(e401.error.error.type, 'authentication_error');
    const client = carriers[0]![1];
    const e400 = await client.messages.create({ model: 'ks-quill-1', max_tokens: 5, temperature: 1.5, messages: [{ role: 'user', content: 'x' }] } as any).catch((e) => e);
    t.ok(e400 instanceof Anthropic.BadRequestError);
    t.equal(e400.error.error.param, 'temperature');
    const e404 = await client.messages.create({ model: 'nw-swift-1', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    t.ok(e404 instanceof Anthropic.NotFoundError, 'a model not served on messages');
    const c400 = await client.messages.countTokens({ model: 'ks-quill-1', messages: [{ role: 'user', content: 'x' }], max_tokens: 5 } as any).catch((e) => e);
    t.ok(c400 instanceof Anthropic.BadRequestError);
    t.equal(c400.error.error.param, 'max_tokens');
  });
}
