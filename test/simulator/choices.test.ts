// The simulator honours `n` as OpenAI does: n choices with their indexes and
// finish reasons, the ceiling per choice, completion tokens summed; streamed
// chunks carry their choice's index. Read with the official openai client.
import OpenAI from 'openai';
import t from 'tap';
import { request } from 'undici';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';

let sim: Simulator;
let openai: OpenAI;
t.before(async () => {
  sim = await startSimulator({ instances: ['alpha'] });
  openai = new OpenAI({ apiKey: 'x', baseURL: `${sim.url}/alpha/v1`, maxRetries: 0 });
});
t.teardown(() => sim.close());

t.test('issue 12 item 17: simulator unary with n = 2: two choices by index, usage over both', async (t) => {
  const one = await openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi [sim:words=5]' }] });
  const two = await openai.chat.completions.create({ model: 'm', n: 2, messages: [{ role: 'user', content: 'hi [sim:words=5]' }] });
  t.same(two.choices.map((c) => c.index), [0, 1], 'two choices, each with its index');
  t.ok(two.choices.every((c) => c.message.content!.split(' ').length === 5 && c.finish_reason === 'stop'), 'each a whole answer with its finish_reason');
  t.equal(two.usage!.prompt_tokens, one.usage!.prompt_tokens, 'the prompt is counted once');
  t.equal(two.usage!.completion_tokens, 10, 'output tokens summed over the choices');
  t.equal(two.usage!.total_tokens, two.usage!.prompt_tokens + 10);
  const cut = await openai.chat.completions.create({ model: 'm', n: 3, max_tokens: 2, messages: [{ role: 'user', content: 'hi [sim:words=5]' }] });
  t.same(cut.choices.map((c) => c.finish_reason), ['length', 'length', 'length'], 'the ceiling applies per choice');
  t.equal(cut.usage!.completion_tokens, 6);
  const tool = await openai.chat.completions.create({
    model: 'm', n: 2, messages: [{ role: 'user', content: 'go [sim:tool=f]' }], tools: [{ type: 'function', function: { name: 'f' } }],
  });
  const ids = tool.choices.map((c) => c.message.tool_calls![0].id);
  t.equal(new Set(ids).size, 2, 'each choice has its own tool call');
});

t.test('issue 12 item 17: simulator stream with n = 2: chunks carry their index, a finish per choice, usage summed', async (t) => {
  const stream = await openai.chat.completions.create({
    model: 'm', n: 2, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi [sim:words=4]' }],
  });
  const text = ['', ''];
  const finish: Array<string | null> = [null, null];
  let usage: OpenAI.CompletionUsage | undefined;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text[c.index] += c.delta.content ?? '';
      if (c.finish_reason) finish[c.index] = c.finish_reason;
    }
  }
  t.same(text.map((s) => s.split(' ').length), [4, 4], 'each choice streamed its whole answer');
  t.same(finish, ['stop', 'stop'], 'each choice finished');
  t.equal(usage?.completion_tokens, 8, 'output tokens summed');
  const runner = openai.chat.completions.stream({ model: 'm', n: 2, messages: [{ role: 'user', content: 'hi [sim:words=3]' }] });
  const done = await runner.finalChatCompletion();
  t.same(done.choices.map((c) => [c.index, c.message.content]), [[0, 'the quick brown'], [1, 'the quick brown']], 'the SDK helper assembles both choices');
});

t.test('issue 12 item 17: simulator refuses an n outside 1..128 as OpenAI does', async (t) => {
  for (const n of [0, 129, 1.5, '2']) {
    const res = await request(`${sim.url}/alpha/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', n, messages: [{ role: 'user', content: 'hi' }] }),
    });
    t.equal(res.statusCode, 400, `n = ${JSON.stringify(n)}`);
    await res.body.dump();
  }
});
