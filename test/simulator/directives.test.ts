// [sim:...] directives, over raw HTTP so every frame, status and drop is seen.
import t from 'tap';
import { request } from 'undici';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';

let sim: Simulator;
t.before(async () => {
  sim = await startSimulator({ instances: ['alpha', 'beta'] });
});
t.teardown(() => sim.close());

type Frame = { event: string | null; data: string; at: number };

async function post(instance: string, path: string, body: unknown) {
  const res = await request(`${sim.url}/${instance}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer x' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return res;
}

async function json(instance: string, path: string, body: unknown) {
  const res = await post(instance, path, body);
  return { status: res.statusCode, headers: res.headers, body: (await res.body.json()) as any };
}

/** Reads an SSE answer frame by frame; a dropped connection ends it with `error`. */
async function sse(instance: string, path: string, body: unknown) {
  const start = performance.now();
  const res = await post(instance, path, body);
  const frames: Frame[] = [];
  let buf = '';
  let error: unknown = null;
  try {
    for await (const chunk of res.body) {
      buf += chunk.toString();
      let i: number;
      while ((i = buf.indexOf('\n\n')) !== -1) {
        const raw = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const ev = /^event: (.*)$/m.exec(raw);
        const data = /^data: (.*)$/m.exec(raw);
        frames.push({ event: ev ? (ev[1] as string) : null, data: data ? (data[1] as string) : '', at: performance.now() });
      }
    }
  } catch (e) {
    error = e;
  }
  return { status: res.statusCode, headers: res.headers, frames, error, start, rest: buf };
}

const user = (text: string) => [{ role: 'user', content: text }];
const chat = (text: string, extra: object = {}) => ({ model: 'm', messages: user(text), ...extra });
const msgs = (text: string, extra: object = {}) => ({ model: 'm', max_tokens: 1000, messages: user(text), ...extra });
const resp = (text: string, extra: object = {}) => ({ model: 'm', input: text, ...extra });

const chatWords = (frames: Frame[]) =>
  frames
    .filter((f) => f.data !== '[DONE]')
    .map((f) => JSON.parse(f.data))
    .filter((c) => c.choices[0]?.delta?.content !== undefined && c.choices[0].delta.role === undefined)
    .map((c) => c.choices[0].delta.content as string);

t.test('words=N: exactly N words and N output tokens on every protocol', async (t) => {
  for (const n of [0, 1, 30, 100]) {
    const c = await json('alpha', '/v1/chat/completions', chat(`[sim:words=${n}]`));
    if (n === 0) t.equal(c.body.choices[0].message.content, '');
    t.equal(c.body.choices[0].message.content.split(' ').filter(Boolean).length, n, `chat unary ${n}`);
    t.equal(c.body.usage.completion_tokens, n);

    const s = await sse('alpha', '/v1/chat/completions', chat(`[sim:words=${n}]`, { stream: true, stream_options: { include_usage: true } }));
    t.equal(chatWords(s.frames).length, n, `chat stream ${n} chunks`);
    t.equal(JSON.parse(s.frames.at(-2)?.data ?? '{}').usage.completion_tokens, n);

    const m = await sse('alpha', '/v1/messages', msgs(`[sim:words=${n}]`, { stream: true }));
    t.equal(m.frames.filter((f) => f.event === 'content_block_delta').length, n, `messages stream ${n}`);
    t.equal(JSON.parse(m.frames.find((f) => f.event === 'message_delta')?.data ?? '{}').usage.output_tokens, n);

    const r = await sse('alpha', '/v1/responses', resp(`[sim:words=${n}]`, { stream: true }));
    t.equal(r.frames.filter((f) => f.event === 'response.output_text.delta').length, n, `responses stream ${n}`);
    t.equal(JSON.parse(r.frames.at(-1)?.data ?? '{}').response.usage.output_tokens, n);
  }
});

t.test('directive in an earlier turn does not apply; last user turn does', async (t) => {
  const c = await json('alpha', '/v1/chat/completions', {
    model: 'm',
    messages: [
      { role: 'user', content: '[sim:status=500]' },
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: '[sim:words=2]' },
      { role: 'assistant', content: '[sim:words=9]' },
    ],
  });
  t.equal(c.status, 200);
  t.equal(c.body.choices[0].message.content, 'the quick');
});

t.test('status=503@beta fails only on beta, in each protocol envelope', async (t) => {
  const text = 'hi [sim:status=503@beta]';
  t.equal((await json('alpha', '/v1/chat/completions', chat(text))).status, 200);
  const b = await json('beta', '/v1/chat/completions', chat(text));
  t.equal(b.status, 503);
  t.same(b.body, { error: { message: b.body.error.message, type: 'server_error', param: null, code: null } });
  const s = await sse('beta', '/v1/chat/completions', chat(text, { stream: true }));
  t.equal(s.status, 503, 'a stream fails before its first byte');
  t.match(s.headers['content-type'], /application\/json/);
  t.equal((await json('alpha', '/v1/messages', msgs(text))).status, 200);
  const m = await json('beta', '/v1/messages', msgs(text));
  t.equal(m.status, 503);
  t.same(m.body, { type: 'error', error: { type: 'api_error', message: m.body.error.message } });
  t.equal((await json('beta', '/v1/responses', resp(text))).status, 503);
  t.equal((await json('beta', '/v1/embeddings', { model: 'e', input: [text, 'x'] })).status, 503);
  t.equal((await json('beta', '/v1/images/generations', { prompt: text })).status, 503);
  const r429 = await json('alpha', '/v1/chat/completions', chat('[sim:status=429]'));
  t.equal(r429.headers['retry-after'], '1');
  t.equal(r429.body.error.type, 'rate_limit_error');
});

t.test('fail_after=3: three content chunks, then a dropped connection', async (t) => {
  const c = await sse('alpha', '/v1/chat/completions', chat('[sim:fail_after=3]', { stream: true }));
  t.equal(c.status, 200);
  t.equal(chatWords(c.frames).length, 3);
  t.notOk(c.frames.some((f) => f.data === '[DONE]'), 'no [DONE]');
  t.ok(c.error, 'the body ends in an error, not a clean end');

  const m = await sse('alpha', '/v1/messages', msgs('[sim:fail_after=3]', { stream: true }));
  t.equal(m.frames.filter((f) => f.event === 'content_block_delta').length, 3);
  t.notOk(m.frames.some((f) => f.event === 'message_stop'));
  t.ok(m.error);

  const r = await sse('alpha', '/v1/responses', resp('[sim:fail_after=3]', { stream: true }));
  t.equal(r.frames.filter((f) => f.event === 'response.output_text.delta').length, 3);
  t.notOk(r.frames.some((f) => f.event === 'response.completed'));
  t.ok(r.error);

  const u = await post('alpha', '/v1/chat/completions', chat('[sim:fail_after=0]'));
  t.equal(u.statusCode, 200);
  await t.rejects(u.body.text(), 'unary body is cut off');
});

t.test('flood=N: N bytes with no newline (stream: instead of events, or after fail_after; unary: trailing whitespace)', async (t) => {
  const N = 3_000_000;
  const c = await sse('alpha', '/v1/chat/completions', chat(`[sim:flood=${N}]`, { stream: true }));
  t.equal(c.status, 200);
  t.equal(c.frames.length, 0, 'no event at all');
  t.equal(c.rest.length, N, 'N bytes');
  t.notOk(c.rest.includes('\n'), 'no newline');
  t.ok(c.error, 'then the connection drops');

  const f = await sse('alpha', '/v1/chat/completions', chat(`[sim:fail_after=2] [sim:flood=${N}]`, { stream: true }));
  t.equal(chatWords(f.frames).length, 2, 'the first chunks, then the filler');
  t.equal(f.rest.length, N);
  t.ok(f.error);

  const u = await post('alpha', '/v1/chat/completions', chat(`[sim:words=2] [sim:flood=${N}]`));
  t.equal(u.statusCode, 200);
  const text = await u.body.text();
  t.ok(text.length > N && text.endsWith(' '.repeat(N)), 'the answer followed by N spaces');
  t.equal(JSON.parse(text).choices[0].message.content, 'the quick', 'still valid JSON');
});

t.test('delay_ms spaces the chunks; unary waits before answering', async (t) => {
  const d = 60;
  const s = await sse('alpha', '/v1/chat/completions', chat(`[sim:delay_ms=${d}] [sim:words=4]`, { stream: true }));
  const words = s.frames.filter((f) => f.data !== '[DONE]' && JSON.parse(f.data).choices[0]?.delta?.content);
  t.equal(words.length, 4);
  t.ok((words[0] as Frame).at - s.start >= d - 5, 'first word after one delay');
  for (let i = 1; i < words.length; i++) {
    const gap = (words[i] as Frame).at - (words[i - 1] as Frame).at;
    t.ok(gap >= d - 10, `gap ${i} is ${gap.toFixed(1)} ms`);
  }
  const start = performance.now();
  const u = await json('alpha', '/v1/messages', msgs(`[sim:delay_ms=${d}]`));
  t.equal(u.status, 200);
  t.ok(performance.now() - start >= d - 5, 'unary answered after the delay');
});

t.test('delay_after: the first N chunks at once, then delay_ms apart', async (t) => {
  const d = 60;
  const s = await sse('alpha', '/v1/chat/completions', chat(`[sim:delay_ms=${d}] [sim:delay_after=3] [sim:words=5]`, { stream: true }));
  const words = s.frames.filter((f) => f.data !== '[DONE]' && JSON.parse(f.data).choices[0]?.delta?.content);
  t.equal(words.length, 5);
  t.ok((words[2] as Frame).at - s.start < d - 10, `the first three words at once (${((words[2] as Frame).at - s.start).toFixed(1)} ms)`);
  for (const i of [3, 4]) {
    const gap = (words[i] as Frame).at - (words[i - 1] as Frame).at;
    t.ok(gap >= d - 10, `then ${d} ms apart: gap ${i} is ${gap.toFixed(1)} ms`);
  }
});

t.test('tool calls on every protocol', async (t) => {
  const fn = { type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } };
  const c = await json('alpha', '/v1/chat/completions', chat('[sim:tool=lookup]', { tools: [fn] }));
  t.equal(c.body.choices[0].finish_reason, 'tool_calls');
  t.match(c.body.choices[0].message.tool_calls[0], { type: 'function', id: /^call_/, function: { name: 'lookup' } });
  t.same(JSON.parse(c.body.choices[0].message.tool_calls[0].function.arguments), { sim: true });

  const cs = await sse('alpha', '/v1/chat/completions', chat('[sim:tool=lookup]', { tools: [fn], stream: true }));
  const chunks = cs.frames.filter((f) => f.data !== '[DONE]').map((f) => JSON.parse(f.data));
  t.match(chunks[0].choices[0].delta.tool_calls[0], { index: 0, id: /^call_/, type: 'function', function: { name: 'lookup', arguments: '' } });
  const args = chunks.slice(1, -1).map((c) => c.choices[0].delta.tool_calls[0].function.arguments).join('');
  t.same(JSON.parse(args), { sim: true });
  t.equal(chunks.at(-1).choices[0].finish_reason, 'tool_calls');

  const rt = { type: 'function', name: 'lookup', parameters: { type: 'object' } };
  const r = await json('alpha', '/v1/responses', resp('[sim:tool=lookup]', { tools: [rt] }));
  t.match(r.body.output[0], { type: 'function_call', name: 'lookup', call_id: /^call_/, arguments: '{"sim":true}' });
  const rs = await sse('alpha', '/v1/responses', resp('[sim:tool=lookup]', { tools: [rt], stream: true }));
  t.same(rs.frames.map((f) => f.event), [
    'response.created', 'response.in_progress', 'response.output_item.added',
    ...Array(5).fill('response.function_call_arguments.delta'),
    'response.function_call_arguments.done', 'response.output_item.done', 'response.completed',
  ]);

  const at = { name: 'lookup', input_schema: { type: 'object' } };
  const m = await json('alpha', '/v1/messages', msgs('[sim:tool=lookup]', { tools: [at] }));
  t.equal(m.body.stop_reason, 'tool_use');
  t.match(m.body.content[0], { type: 'tool_use', id: /^toolu_/, name: 'lookup', input: { sim: true } });
  const ms = await sse('alpha', '/v1/messages', msgs('[sim:tool=lookup]', { tools: [at], stream: true }));
  const start = JSON.parse(ms.frames[1]?.data ?? '{}');
  t.same(start.content_block.input, {});
  const partial = ms.frames.filter((f) => f.event === 'content_block_delta').map((f) => JSON.parse(f.data).delta.partial_json).join('');
  t.same(JSON.parse(partial), { sim: true });

  const missing = await json('alpha', '/v1/chat/completions', chat('[sim:tool=nope]', { tools: [fn] }));
  t.equal(missing.status, 400, 'a tool that is not declared is refused');
  t.equal(missing.body.error.type, 'invalid_request_error');
  t.equal((await json('alpha', '/v1/messages', msgs('[sim:tool=nope]'))).status, 400);
});

t.test('no_usage leaves usage out', async (t) => {
  const c = await json('alpha', '/v1/chat/completions', chat('[sim:no_usage]'));
  t.equal(c.status, 200);
  t.notOk('usage' in c.body);
  const cs = await sse('alpha', '/v1/chat/completions', chat('[sim:no_usage]', { stream: true, stream_options: { include_usage: true } }));
  t.notOk(cs.frames.some((f) => f.data.includes('"usage"')), 'no usage chunk');
  t.equal(cs.frames.at(-1)?.data, '[DONE]');
  t.notOk('usage' in (await json('alpha', '/v1/messages', msgs('[sim:no_usage]'))).body);
  const ms = await sse('alpha', '/v1/messages', msgs('[sim:no_usage]', { stream: true }));
  t.notOk(ms.frames.some((f) => f.data.includes('"usage"')));
  t.notOk('usage' in (await json('alpha', '/v1/responses', resp('[sim:no_usage]'))).body);
  t.notOk('usage' in (await json('alpha', '/v1/embeddings', { model: 'e', input: '[sim:no_usage]' })).body);
});

t.test('output ceiling cuts the answer', async (t) => {
  const c = await json('alpha', '/v1/chat/completions', chat('[sim:words=10]', { max_completion_tokens: 3 }));
  t.equal(c.body.choices[0].message.content, 'the quick brown');
  t.equal(c.body.choices[0].finish_reason, 'length');
  t.equal(c.body.usage.completion_tokens, 3);
  const c2 = await json('alpha', '/v1/chat/completions', chat('[sim:words=10]', { max_tokens: 10 }));
  t.equal(c2.body.choices[0].finish_reason, 'stop', 'exactly at the ceiling is not cut');

  const cs = await sse('alpha', '/v1/chat/completions', chat('[sim:words=10]', { max_tokens: 2, stream: true }));
  t.equal(chatWords(cs.frames).length, 2);
  t.equal(JSON.parse(cs.frames.at(-2)?.data ?? '{}').choices[0].finish_reason, 'length');

  const r = await json('alpha', '/v1/responses', resp('[sim:words=10]', { max_output_tokens: 4 }));
  t.equal(r.body.status, 'incomplete');
  t.same(r.body.incomplete_details, { reason: 'max_output_tokens' });
  t.equal(r.body.usage.output_tokens, 4);
  const rs = await sse('alpha', '/v1/responses', resp('[sim:words=10]', { max_output_tokens: 4, stream: true }));
  t.equal(rs.frames.at(-1)?.event, 'response.incomplete');
  t.equal(JSON.parse(rs.frames.at(-1)?.data ?? '{}').response.incomplete_details.reason, 'max_output_tokens');

  const ms = await sse('alpha', '/v1/messages', msgs('[sim:words=10]', { max_tokens: 5, stream: true }));
  t.equal(ms.frames.filter((f) => f.event === 'content_block_delta').length, 5);
  t.equal(JSON.parse(ms.frames.find((f) => f.event === 'message_delta')?.data ?? '{}').delta.stop_reason, 'max_tokens');
});

t.test('deterministic embeddings', async (t) => {
  const a = await json('alpha', '/v1/embeddings', { model: 'e', input: ['same', 'other'], encoding_format: 'base64' });
  const b = await json('beta', '/v1/embeddings', { model: 'e', input: ['same'], encoding_format: 'base64' });
  t.equal(a.body.data[0].embedding, b.body.data[0].embedding, 'same input, same bytes');
  t.not(a.body.data[0].embedding, a.body.data[1].embedding, 'different input, different vector');
  const tok = await json('alpha', '/v1/embeddings', { model: 'e', input: [[1, 2, 3]] });
  t.equal(tok.body.usage.prompt_tokens, 3, 'token-array input counts its tokens');
});

t.test('refusals: unknown instance, bad JSON, bad requests', async (t) => {
  const unknown = await json('gamma', '/v1/chat/completions', chat('hi'));
  t.equal(unknown.status, 404);
  t.equal(unknown.body.error.type, 'not_found_error');
  const unknownMsg = await json('gamma', '/v1/messages', msgs('hi'));
  t.same(unknownMsg.body.type, 'error');
  const bad = await json('alpha', '/v1/chat/completions', '{"model":');
  t.equal(bad.status, 400);
  t.equal(bad.body.error.type, 'invalid_request_error');
  const badMsg = await json('alpha', '/v1/messages', 'nope');
  t.equal(badMsg.status, 400);
  t.same(badMsg.body, { type: 'error', error: { type: 'invalid_request_error', message: badMsg.body.error.message } });
  t.equal((await json('alpha', '/v1/messages', { model: 'm', messages: user('hi') })).status, 400, 'messages needs max_tokens');
  t.equal((await json('alpha', '/v1/chat/completions', { model: 'm' })).status, 400, 'chat needs messages');
  t.equal((await json('alpha', '/v1/embeddings', { model: 'm', input: [] })).status, 400);
  t.equal((await json('alpha', '/v1/images/generations', { prompt: 'x', n: 11 })).status, 400);
  t.equal((await json('alpha', '/v1/nothing', {})).status, 404);
});
