// POST /v1/chat/completions through the official `openai` package, unchanged,
// against a real gateway over real HTTP (the simulator as the supplier).
import OpenAI from 'openai';
import t from 'tap';
import { gatewayWithSimulator } from '../helpers/gateway.js';
import { provision } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';

const db = await testDatabase(t);
if (db !== null) {
  const { gw } = await gatewayWithSimulator(t, db);
  const { key } = await provision(gw.url, { balance: '50.00' });
  const client = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });

  t.test('unary: the gateway\'s id, the model echoed as sent, usage in the chat vocabulary', async (t) => {
    const { data: reply, response } = await client.chat.completions
      .create({ model: 'nw-swift-1', messages: [{ role: 'user', content: 'Say hello [sim:words=5]' }] })
      .withResponse();
    t.equal(reply.id, response.headers.get('x-request-id'), 'id is the service request identity');
    t.equal(reply.object, 'chat.completion');
    t.equal(reply.model, 'nw-swift-1');
    t.type(reply.created, 'number');
    t.equal(reply.choices[0].finish_reason, 'stop');
    t.equal(reply.choices[0].message.content!.trim().split(/\s+/).length, 5);
    t.equal(reply.usage!.completion_tokens, 5);
    t.ok(reply.usage!.prompt_tokens > 0);
    t.equal(reply.usage!.total_tokens, reply.usage!.prompt_tokens + 5);
  });

  t.test('an alias is echoed exactly as sent', async (t) => {
    const reply = await client.chat.completions.create({ model: 'swift', messages: [{ role: 'user', content: 'hi' }] });
    t.equal(reply.model, 'swift');
  });

  t.test('stream with include_usage: same id and model on every chunk, finish_reason, usage chunk, [DONE]', async (t) => {
    const stream = await client.chat.completions.create({
      model: 'nw-swift-1',
      messages: [{ role: 'user', content: 'count [sim:words=6]' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    const ids = new Set(chunks.map((c) => c.id));
    t.equal(ids.size, 1, 'one id');
    t.match([...ids][0], /^req_/);
    t.ok(chunks.every((c) => c.model === 'nw-swift-1' && c.object === 'chat.completion.chunk'));
    const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
    t.equal(text.trim().split(/\s+/).length, 6);
    const finishing = chunks.filter((c) => c.choices[0]?.finish_reason);
    t.equal(finishing.length, 1);
    t.equal(finishing[0].choices[0].finish_reason, 'stop');
    const last = chunks[chunks.length - 1];
    t.same(last.choices, [], 'usage chunk has empty choices');
    t.equal(last.usage!.completion_tokens, 6);
  });

  t.test('stream without include_usage has no usage chunk', async (t) => {
    const stream = await client.chat.completions.create({ model: 'nw-swift-1', messages: [{ role: 'user', content: '[sim:words=3]' }], stream: true });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    t.notOk(chunks.some((c) => c.usage), 'no usage member anywhere');
    t.equal(chunks[chunks.length - 1].choices[0].finish_reason, 'stop');
  });

  t.test('tools round trip', async (t) => {
    const tools = [{ type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Oslo? [sim:tool=get_weather]' }];
    const first = await client.chat.completions.create({ model: 'nw-swift-1', messages, tools });
    t.equal(first.choices[0].finish_reason, 'tool_calls');
    const call = first.choices[0].message.tool_calls![0];
    t.equal(call.type, 'function');
    t.equal((call as any).function.name, 'get_weather');
    t.same(JSON.parse((call as any).function.arguments), { sim: true });
    messages.push(first.choices[0].message);
    messages.push({ role: 'tool', tool_call_id: call.id, content: '{"temp": 3}' });
    messages.push({ role: 'user', content: 'thanks [sim:words=4]' });
    const second = await client.chat.completions.create({ model: 'nw-swift-1', messages, tools });
    t.equal(second.choices[0].finish_reason, 'stop');
    t.equal(second.choices[0].message.content!.trim().split(/\s+/).length, 4);
  });

  t.test('the ceiling: max_tokens cuts with finish_reason length', async (t) => {
    const reply = await client.chat.completions.create({ model: 'nw-swift-1', max_tokens: 3, messages: [{ role: 'user', content: '[sim:words=10]' }] });
    t.equal(reply.choices[0].finish_reason, 'length');
    t.equal(reply.usage!.completion_tokens, 3);
  });

  t.test('SDK error classes: 401, 400 with param, 404', async (t) => {
    const bad = new OpenAI({ apiKey: 'tg_sk_notakeynotakeynotakeynotakeynotakey', baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const e401 = await bad.chat.completions.create({ model: 'nw-swift-1', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    t.ok(e401 instanceof OpenAI.AuthenticationError, 'AuthenticationError');
    t.equal(e401.status, 401);

    const e400 = await client.chat.completions.create({ model: 'nw-swift-1', messages: [{ role: 'user', content: 'x' }], stop: 'END' as any }).catch((e) => e);
    t.ok(e400 instanceof OpenAI.BadRequestError, 'BadRequestError for a bare-string stop');
    t.equal(e400.param, 'stop');
    t.equal(e400.type, 'invalid_request_error');

    const e404 = await client.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    t.ok(e404 instanceof OpenAI.NotFoundError, 'NotFoundError');
    t.equal(e404.param, 'model');
  });
}
