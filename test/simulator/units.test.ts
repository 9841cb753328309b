// Pure parts of the simulator: the word list's token property, directive
// parsing, embeddings vectors, and the standalone entry point.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { get_encoding } from 'tiktoken';
import { request } from 'undici';
import { BoundedCache } from '../../src/simulator/cache.js';
import { TOOL_ARGUMENTS, TOOL_FRAGMENTS } from '../../src/simulator/common.js';
import { NO_DIRECTIVES, parseDirectives } from '../../src/simulator/directives.js';
import { vectorOf } from '../../src/simulator/embeddings.js';
import { countInput, countTokens, INPUT_TOKENS_PER_MESSAGE } from '../../src/simulator/tokens.js';
import { answerText, wordChunk, WORD_LIST } from '../../src/simulator/words.js';

const enc = get_encoding('o200k_base');
const tokens = (s: string): number => enc.encode_ordinary(s).length;

t.test('every word is one o200k token, bare and after a space', async (t) => {
  t.equal(WORD_LIST.length, 64);
  t.equal(new Set(WORD_LIST).size, WORD_LIST.length, 'no duplicates');
  const bad = WORD_LIST.filter((w) => tokens(w) !== 1 || tokens(` ${w}`) !== 1);
  t.same(bad, []);
});

t.test('an answer of N words is N tokens and the chunks concatenate to it', async (t) => {
  for (const n of [1, 2, 8, 63, 64, 65, 129, 500]) {
    const text = answerText(n);
    t.equal(text.split(' ').length, n, `${n} words`);
    t.equal(tokens(text), n, `${n} tokens`);
    let joined = '';
    for (let i = 0; i < n; i++) joined += wordChunk(i);
    t.equal(joined, text);
  }
  t.equal(answerText(0), '');
});

t.test('tool call fragments are its o200k tokens', async (t) => {
  t.equal(TOOL_FRAGMENTS.join(''), TOOL_ARGUMENTS);
  t.equal(tokens(TOOL_ARGUMENTS), TOOL_FRAGMENTS.length);
  t.same(JSON.parse(TOOL_ARGUMENTS), { sim: true });
});

t.test('token counts', async (t) => {
  t.equal(countTokens('<|endoftext|> is plain text here'), tokens('<|endoftext|> is plain text here'), 'special-token text does not throw');
  t.equal(countTokens(''), 0);
  const big = 'lorem ipsum dolor '.repeat(500);
  t.equal(countTokens(big), tokens(big));
  t.equal(countTokens(big), tokens(big), 'memoized answer is the same');
  t.equal(countInput(['a b', 'c'], 2), tokens('a b\nc') + 2 * INPUT_TOKENS_PER_MESSAGE);
});

t.test('directive parsing', async (t) => {
  t.equal(parseDirectives('no directives here', 'alpha'), NO_DIRECTIVES, 'shared constant when none');
  t.same(parseDirectives('x [sim:words=3] y [sim:delay_ms=20][sim:no_usage] [sim:tool=get_weather]', 'alpha'), {
    words: 3, status: 0, failAfter: -1, delayMs: 20, delayAfter: 0, tool: 'get_weather', noUsage: true, inputTokens: -1, flood: 0,
  });
  t.equal(parseDirectives('[sim:delay_after=40000]', 'a').delayAfter, 40000);
  t.equal(parseDirectives('[sim:input_tokens=90000]', 'a').inputTokens, 90000);
  t.equal(parseDirectives('[sim:flood=100000000]', 'a').flood, 100_000_000);
  t.equal(parseDirectives('[sim:flood=1000000000]', 'a').flood, 0, 'at most nine digits');
  t.equal(parseDirectives('[sim:status=503@beta]', 'alpha').status, 0, 'scoped to another instance');
  t.equal(parseDirectives('[sim:status=503@beta]', 'beta').status, 503);
  t.equal(parseDirectives('[sim:status=503@bet]', 'beta').status, 0, 'scope is an exact name');
  t.equal(parseDirectives('[sim:fail_after=0]', 'a').failAfter, 0);
  t.equal(parseDirectives('[sim:words=5] [sim:words=7]', 'a').words, 7, 'the later one wins');
  t.equal(parseDirectives('[sim:words=-1] [sim:words=x] [sim:words=2.5]', 'a').words, -1, 'malformed values are ignored');
  t.equal(parseDirectives('[sim:status=200]', 'a').status, 0, 'only error statuses');
  t.equal(parseDirectives('[sim:words=3', 'a').words, -1, 'unterminated');
  t.equal(parseDirectives('[sim:unknown=1][sim:words=4@a]', 'a').words, 4);
});

t.test('embedding vectors are deterministic unit vectors', async (t) => {
  const a = vectorOf('hello', 256);
  t.same(Array.from(vectorOf('hello', 256)), Array.from(a));
  t.notSame(Array.from(vectorOf('hellp', 256)), Array.from(a));
  let sum = 0;
  for (const x of a) sum += x * x;
  t.ok(Math.abs(sum - 1) < 1e-5);
  t.ok(a.some((x) => x < 0) && a.some((x) => x > 0), 'components of both signs');
});

t.test('bounded cache evicts by entries and by key length', async (t) => {
  const c = new BoundedCache<number>(2, 10);
  c.set('a', 1);
  c.set('b', 2);
  c.set('c', 3);
  t.equal(c.get('a'), undefined, 'oldest evicted at the entry bound');
  t.equal(c.get('c'), 3);
  c.set('12345678', 4);
  t.equal(c.get('b'), undefined, 'evicted at the length bound');
  c.set('x'.repeat(11), 5);
  t.equal(c.get('x'.repeat(11)), undefined, 'a key over the bound is not kept');
});

t.test('standalone entry prints its url and stops on SIGTERM', async (t) => {
  const main = fileURLToPath(new URL('../../src/simulator/main.ts', import.meta.url));
  // execArgv carries tap's TypeScript loader into the child.
  const child = spawn(process.execPath, [...process.execArgv, main, '--port', '0', '--instances', 'alpha,beta'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) resolve(out.slice(0, out.indexOf('\n')));
    });
    child.once('exit', (code) => reject(new Error(`exited ${code}`)));
  });
  const { simulator } = JSON.parse(line) as { simulator: string };
  t.match(simulator, /^http:\/\/127\.0\.0\.1:\d+$/);
  const res = await request(`${simulator}/beta/v1/chat/completions`, {
    method: 'POST',
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: '[sim:words=2]' }] }),
  });
  t.equal(((await res.body.json()) as { choices: { message: { content: string } }[] }).choices[0]?.message.content, 'the quick');
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  t.equal(await exited, 0);
});
