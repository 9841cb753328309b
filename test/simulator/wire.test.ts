// The simulator speaks the official wire formats: the official openai and
// @anthropic-ai/sdk clients, pointed at it, parse every reply and stream.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import t from 'tap';
import { connect } from 'node:net';
import { request } from 'undici';
import { get_encoding } from 'tiktoken';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';

const enc = get_encoding('o200k_base');
const tokens = (s: string): number => enc.encode_ordinary(s).length;

let sim: Simulator;
let openai: OpenAI;
let anthropic: Anthropic;

t.before(async () => {
  sim = await startSimulator({ instances: ['alpha', 'beta'] });
  openai = new OpenAI({ apiKey: 'x', baseURL: `${sim.url}/alpha/v1`, maxRetries: 0 });
  anthropic = new Anthropic({ apiKey: 'x', baseURL: `${sim.url}/alpha`, maxRetries: 0 });
});
t.teardown(() => sim.close());

t.test('url and port', async (t) => {
  t.match(sim.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  t.equal(sim.url, `http://127.0.0.1:${sim.port}`);
});

t.test('chat completions unary', async (t) => {
  const r = await openai.chat.completions.create({
    model: 'sim-chat',
    messages: [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'hello there' },
    ],
  });
  t.equal(r.object, 'chat.completion');
  t.equal(r.model, 'sim-chat');
  t.match(r.id, /^chatcmpl-/);
  t.equal(r.choices[0]?.finish_reason, 'stop');
  t.equal(r.choices[0]?.message.role, 'assistant');
  const text = r.choices[0]?.message.content ?? '';
  t.equal(text.split(' ').length, 8, 'default answer is 8 words');
  t.equal(r.usage?.completion_tokens, 8);
  t.equal(r.usage?.prompt_tokens, tokens('be brief\nhello there') + 2 * 3, 'text tokens plus 3 per message');
  t.equal(r.usage?.total_tokens, (r.usage?.prompt_tokens ?? 0) + 8);
  t.same(r.usage?.prompt_tokens_details, { cached_tokens: 0 });
});

t.test('chat completions stream with include_usage', async (t) => {
  const stream = await openai.chat.completions.create({
    model: 'sim-chat',
    stream: true,
    stream_options: { include_usage: true },
    messages: [{ role: 'user', content: [{ type: 'text', text: 'count [sim:words=5]' }] }],
  });
  const ids = new Set<string>();
  const deltas: string[] = [];
  let finish: string | null = null;
  let usage: OpenAI.CompletionUsage | undefined | null;
  let first = true;
  for await (const c of stream) {
    ids.add(c.id);
    t.equal(c.object, 'chat.completion.chunk');
    t.equal(c.model, 'sim-chat');
    if (first) {
      t.same(c.choices[0]?.delta, { role: 'assistant', content: '' }, 'first chunk carries the role');
      first = false;
      continue;
    }
    if (c.choices.length === 0) {
      usage = c.usage;
      continue;
    }
    const ch = c.choices[0];
    if (ch?.finish_reason) finish = ch.finish_reason;
    else deltas.push(ch?.delta.content ?? '');
  }
  t.equal(ids.size, 1, 'one id on every chunk');
  t.equal(deltas.length, 5, 'one chunk per word');
  t.equal(deltas.join('').split(' ').length, 5);
  t.equal(finish, 'stop');
  t.equal(usage?.completion_tokens, 5);
  t.equal(usage?.prompt_tokens, tokens('count [sim:words=5]') + 3);
});

t.test('chat completions stream without include_usage has no usage chunk', async (t) => {
  const stream = await openai.chat.completions.create({
    model: 'm',
    stream: true,
    messages: [{ role: 'user', content: 'hi' }],
  });
  let chunks = 0;
  for await (const c of stream) {
    chunks++;
    t.ok(c.choices.length === 1, 'every chunk has a choice');
    t.notOk(c.usage);
  }
  t.equal(chunks, 1 + 8 + 1, 'role chunk, 8 words, closing chunk');
});

t.test('chat completions stream helper accumulates', async (t) => {
  const final = await openai.chat.completions
    .stream({ model: 'm', messages: [{ role: 'user', content: 'x [sim:words=12]' }] })
    .finalChatCompletion();
  t.equal(final.choices[0]?.message.content?.split(' ').length, 12);
  t.equal(final.choices[0]?.finish_reason, 'stop');
});

t.test('responses unary', async (t) => {
  const r = await openai.responses.create({ model: 'sim-resp', instructions: 'be kind', input: 'hello [sim:words=6]' });
  t.equal(r.object, 'response');
  t.equal(r.status, 'completed');
  t.equal(r.model, 'sim-resp');
  t.equal(r.output_text.split(' ').length, 6);
  t.equal(r.usage?.output_tokens, 6);
  t.equal(r.usage?.input_tokens, tokens('be kind\nhello [sim:words=6]') + 2 * 3);
  t.same(r.usage?.input_tokens_details, { cached_tokens: 0 });
  t.same(r.usage?.output_tokens_details, { reasoning_tokens: 0 });
});

t.test('responses stream: events in order and the helper accumulates', async (t) => {
  const stream = openai.responses.stream({
    model: 'sim-resp',
    input: [{ role: 'user', content: [{ type: 'input_text', text: 'hi [sim:words=3]' }] }],
  });
  const types: string[] = [];
  const seqs: number[] = [];
  for await (const e of stream) {
    types.push(e.type);
    seqs.push(e.sequence_number);
  }
  const final = await stream.finalResponse();
  t.same(types, [
    'response.created',
    'response.in_progress',
    'response.output_item.added',
    'response.content_part.added',
    'response.output_text.delta',
    'response.output_text.delta',
    'response.output_text.delta',
    'response.output_text.done',
    'response.content_part.done',
    'response.output_item.done',
    'response.completed',
  ]);
  t.same(seqs, types.map((_, i) => i), 'sequence_number counts from 0');
  t.equal(final.output_text, 'the quick brown');
  t.equal(final.usage?.output_tokens, 3);
});

t.test('responses create with stream: true', async (t) => {
  const stream = await openai.responses.create({ model: 'm', input: 'x', stream: true });
  let text = '';
  let done: OpenAI.Responses.Response | null = null;
  for await (const e of stream) {
    if (e.type === 'response.output_text.delta') text += e.delta;
    if (e.type === 'response.completed') done = e.response;
  }
  t.equal(text.split(' ').length, 8);
  t.equal(done?.output_text ?? (done?.output[0] as { content: { text: string }[] }).content[0]?.text, text);
});

t.test('messages unary', async (t) => {
  const m = await anthropic.messages.create({
    model: 'sim-msg',
    max_tokens: 100,
    system: 'be terse',
    messages: [{ role: 'user', content: 'hi [sim:words=4]' }],
  });
  t.equal(m.type, 'message');
  t.equal(m.role, 'assistant');
  t.equal(m.model, 'sim-msg');
  t.equal(m.stop_reason, 'end_turn');
  t.equal(m.content[0]?.type, 'text');
  t.equal((m.content[0] as Anthropic.TextBlock).text.split(' ').length, 4);
  t.equal(m.usage.output_tokens, 4);
  t.equal(m.usage.input_tokens, tokens('be terse\nhi [sim:words=4]') + 2 * 3);
  t.equal(m.usage.cache_creation_input_tokens, 0);
  t.equal(m.usage.cache_read_input_tokens, 0);
});

t.test('messages stream', async (t) => {
  const stream = anthropic.messages.stream({
    model: 'sim-msg',
    max_tokens: 100,
    messages: [{ role: 'user', content: [{ type: 'text', text: 'go [sim:words=7]' }] }],
  });
  const types: string[] = [];
  for await (const e of stream) types.push(e.type);
  const m = await stream.finalMessage();
  t.same(types, [
    'message_start',
    'content_block_start',
    'content_block_delta', 'content_block_delta', 'content_block_delta', 'content_block_delta',
    'content_block_delta', 'content_block_delta', 'content_block_delta',
    'content_block_stop',
    'message_delta',
    'message_stop',
  ], 'ping is not surfaced by the SDK; the rest arrive in order');
  t.equal((m.content[0] as Anthropic.TextBlock).text.split(' ').length, 7);
  t.equal(m.stop_reason, 'end_turn');
  t.equal(m.usage.output_tokens, 7);
  t.equal(m.usage.input_tokens, tokens('go [sim:words=7]') + 3);
});

t.test('anthropic client with x-api-key on another instance', async (t) => {
  const beta = new Anthropic({ apiKey: 'anything', baseURL: `${sim.url}/beta`, maxRetries: 0 });
  const m = await beta.messages.create({ model: 'x', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] });
  t.equal(m.stop_reason, 'max_tokens', '8 words cut at max_tokens 5');
  t.equal(m.usage.output_tokens, 5);
});

t.test('embeddings: base64 decodes to unit-length float32 vectors', async (t) => {
  const r = await openai.embeddings.create({ model: 'sim-embed', input: ['alpha', 'beta'], encoding_format: 'base64' });
  t.equal(r.object, 'list');
  t.equal(r.model, 'sim-embed');
  t.equal(r.data.length, 2);
  for (const [i, d] of r.data.entries()) {
    t.equal(d.index, i);
    t.equal(typeof d.embedding, 'string');
    const bytes = Buffer.from(d.embedding as unknown as string, 'base64');
    t.equal(bytes.length, 1536 * 4);
    const v = new Float32Array(bytes.buffer, bytes.byteOffset, 1536);
    let sum = 0;
    for (const x of v) sum += x * x;
    t.ok(Math.abs(Math.sqrt(sum) - 1) < 1e-5, `vector ${i} has unit length`);
  }
  t.equal(r.usage.prompt_tokens, 2);
  t.equal(r.usage.total_tokens, 2);
});

t.test('embeddings: float format, dimensions, same numbers as base64', async (t) => {
  const f = await openai.embeddings.create({ model: 'e', input: 'same text', dimensions: 64, encoding_format: 'float' });
  const b = await openai.embeddings.create({ model: 'e', input: 'same text', dimensions: 64, encoding_format: 'base64' });
  const floats = f.data[0]?.embedding as number[];
  t.equal(floats.length, 64);
  const bytes = Buffer.from(b.data[0]?.embedding as unknown as string, 'base64');
  t.same(Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, 64)), floats);
  t.equal(f.usage.prompt_tokens, tokens('same text'));
});

t.test('embeddings: a repeated large batch (kept whole, over 1 MB) gets the same bytes; its model and usage are its own; directives still apply', async (t) => {
  const post = async (body: object): Promise<{ status: number; text: string }> => {
    const r = await request(`${sim.url}/alpha/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: r.statusCode, text: await r.body.text() };
  };
  const input = Array.from({ length: 64 }, (_, i) => `${i === 0 ? '[sim:floats] ' : ''}kept text ${i}`);
  const first = await post({ model: 'e1', input, dimensions: 1024 });
  const again = await post({ model: 'e1', input, dimensions: 1024 });
  t.equal(first.status, 200);
  t.equal(again.text, first.text, 'the same answer, byte for byte');
  const parsed = JSON.parse(first.text);
  t.ok(first.text.length > 1 << 20, `over 1 MB (${first.text.length} bytes): the size the simulator keeps`);
  t.equal(parsed.data.length, 64);
  t.equal(parsed.data[63].embedding.length, 1024, 'floats, as the directive asked');
  t.equal(JSON.parse((await post({ model: 'e2', input, dimensions: 1024 })).text).model, 'e2', 'another model: its own answer');
  t.notOk('usage' in JSON.parse((await post({ model: 'e1', input: [`${input[0]} [sim:no_usage]`, ...input.slice(1)], dimensions: 1024 })).text), 'no usage when asked');
  const failing = await post({ model: 'e1', input: [`${input[0]} [sim:status=503]`, ...input.slice(1)], dimensions: 1024 });
  t.equal(failing.status, 503, 'a status directive is not answered from what was kept');
  t.same(await post({ model: 'e1', input, dimensions: 1024 }), first, 'and the plain batch is still answered the same');
});

t.test('a large answer goes out in slices: whole to a slow reader, other answers meanwhile, a reader that leaves mid-way', async (t) => {
  const input = Array.from({ length: 64 }, (_, i) => `${i === 0 ? '[sim:floats] ' : ''}sliced text ${i}`);
  const body = JSON.stringify({ model: 'e1', input, dimensions: 3072 });
  const fast = await (await request(`${sim.url}/alpha/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })).body.text();
  t.ok(fast.length > 4 << 20, `over 4 MB (${fast.length} bytes): many slices, and more than a socket buffer holds`);
  const rawCall = (leaveAfter: number): Promise<{ head: string; body: Buffer }> =>
    new Promise((resolve, reject) => {
      const sock = connect(sim.port, '127.0.0.1');
      const chunks: Buffer[] = [];
      let got = 0;
      sock.on('error', reject);
      sock.write(`POST /alpha/v1/embeddings HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
      sock.pause(); // the socket fills and the simulator meets backpressure
      setTimeout(() => sock.resume(), 300);
      sock.on('data', (c: Buffer) => {
        chunks.push(c);
        got += c.length;
        const all = Buffer.concat(chunks);
        const end = all.indexOf('\r\n\r\n');
        if (got >= leaveAfter) {
          sock.destroy();
          resolve({ head: '', body: Buffer.alloc(0) });
          return;
        }
        if (end < 0) return;
        const length = Number(/content-length: (\d+)/i.exec(all.subarray(0, end).toString('latin1'))?.[1]);
        if (all.length - end - 4 >= length) {
          sock.destroy();
          resolve({ head: all.subarray(0, end).toString('latin1'), body: all.subarray(end + 4, end + 4 + length) });
        }
      });
    });
  const slow = rawCall(Infinity);
  const left = rawCall(1 << 20);
  await new Promise((r) => setTimeout(r, 100));
  const small = await openai.chat.completions.create({ model: 'sim-chat', messages: [{ role: 'user', content: 'meanwhile' }] });
  t.equal(small.object, 'chat.completion', 'a small call is answered while the large answers wait on their readers');
  await left;
  const { head, body: got } = await slow;
  t.match(head, /^HTTP\/1\.1 200/);
  t.equal(got.toString('utf8'), fast, 'the slow reader gets the same bytes, whole');
  const after = await openai.chat.completions.create({ model: 'sim-chat', messages: [{ role: 'user', content: 'after a reader left' }] });
  t.equal(after.object, 'chat.completion', 'the simulator still answers after a reader left mid-answer');
});

t.test('images: b64_json and url', async (t) => {
  const b = await openai.images.generate({ model: 'sim-img', prompt: 'a cat', n: 2 });
  t.equal(b.data?.length, 2);
  const png = Buffer.from(b.data?.[0]?.b64_json ?? '', 'base64');
  t.same([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'PNG signature');
  t.equal(png.subarray(12, 16).toString('latin1'), 'IHDR');
  t.type(b.created, 'number');

  const u = await openai.images.generate({ model: 'sim-img', prompt: 'a dog', response_format: 'url' });
  const url = u.data?.[0]?.url ?? '';
  t.ok(url.startsWith(`${sim.url}/alpha/`), 'url points at the simulator');
  const got = await request(url);
  t.equal(got.statusCode, 200);
  t.equal(got.headers['content-type'], 'image/png');
  t.same(Buffer.from(await got.body.arrayBuffer()), png, 'serves the same PNG');
});

t.test('sdk errors: status in the protocol envelope', async (t) => {
  await t.rejects(
    openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: '[sim:status=429]' }] }),
    { status: 429, error: { type: 'rate_limit_error' } } as object as Error,
  );
  await t.rejects(
    anthropic.messages.create({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: '[sim:status=529]' }] }),
    { status: 529, error: { type: 'error', error: { type: 'overloaded_error' } } } as object as Error,
  );
});
