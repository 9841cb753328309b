// The count_tokens estimate (src/surfaces/count-tokens/): what it accepts,
// what it refuses by name, and that it is deterministic and monotone — more
// text never gives fewer tokens. Counted with the pool's own task
// (workers/count-tokens.ts), and through the pool's large-body path.
import t from 'tap';
import { GatewayError } from '../../../src/errors/gateway-error.js';
import { OffloadPool } from '../../../src/offload/pool.js';
import { countTokensOperation } from '../../../src/surfaces/count-tokens/operation.js';
import {
  countTexts, decodeCountTokens, estimateOf, TOKENS_PER_CALL, TOKENS_PER_MESSAGE, TOKENS_PER_TOOL, TOOLS_PREAMBLE_TOKENS,
} from '../../../src/surfaces/count-tokens/estimate.js';
import { IMAGE_TOKENS } from '../../../src/surfaces/messages/content.js';
import { localOperationNamed } from '../../../src/surfaces/index.js';
import countTokens from '../../../workers/count-tokens.js';

const base = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };

async function estimate(body: unknown): Promise<number> {
  return estimateOf(await countTexts(decodeCountTokens(body, 0), countTokens));
}

function refusedParam(body: unknown): string | null {
  try {
    decodeCountTokens(body, 0);
    return null;
  } catch (err) {
    if (!(err instanceof GatewayError) || err.code !== 'invalid_request') throw err;
    return err.param ?? '(body)';
  }
}

t.test('registered for the pool (the registry, surfaces/index.ts)', async (t) => {
  t.equal(localOperationNamed('count_tokens'), countTokensOperation);
});

t.test('accepts model, messages, system, tools, tool_choice, thinking, metadata, context_management', async (t) => {
  t.equal(
    refusedParam({
      ...base,
      system: 'be brief',
      tools: [{ name: 'get', input_schema: { type: 'object' } }],
      tool_choice: { type: 'tool', name: 'get' },
      thinking: { type: 'enabled', budget_tokens: 1024 },
      metadata: { user_id: 'u' },
      context_management: {},
    }),
    null,
  );
  t.equal(refusedParam({ messages: base.messages }), 'model');
  t.equal(refusedParam({ model: 'm' }), 'messages');
  t.equal(refusedParam({ ...base, tool_choice: { type: 'tool', name: 'undeclared' } }), 'tool_choice.name');
});

t.test('each generation-only member is refused by name', async (t) => {
  const members: Record<string, unknown> = {
    max_tokens: 100, stream: false, output_config: {}, stop_sequences: ['END'], temperature: 0.5, top_p: 0.5, top_k: 5,
  };
  for (const [member, value] of Object.entries(members)) t.equal(refusedParam({ ...base, [member]: value }), member, member);
  t.equal(refusedParam({ ...base, n: 1 }), 'n', 'any other unknown member too');
});

t.test('the estimate: the texts counted with o200k_base plus the documented overheads', async (t) => {
  const hi = (await countTokens(['hi']))[0]!;
  t.equal(await estimate(base), TOKENS_PER_CALL + TOKENS_PER_MESSAGE + hi);
  const tool = { name: 'get', input_schema: { type: 'object' } };
  const withTool = await estimate({ ...base, tools: [tool] });
  const toolText = (await countTokens([JSON.stringify(tool)]))[0]!;
  t.equal(withTool - (await estimate(base)), TOOLS_PREAMBLE_TOKENS + TOKENS_PER_TOOL + toolText);
  const image = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'A'.repeat(50_000) } };
  t.equal(await estimate({ ...base, messages: [{ role: 'user', content: [image] }] }), TOKENS_PER_CALL + TOKENS_PER_MESSAGE + IMAGE_TOKENS, 'an image: its stated figure, not its bytes');
  const special = await estimate({ ...base, messages: [{ role: 'user', content: 'a <|endoftext|> b' }] });
  t.ok(special > TOKENS_PER_CALL + TOKENS_PER_MESSAGE, 'special-token text is counted as text (encode_ordinary), never thrown on');
});

t.test('deterministic: the same body always gives the same estimate', async (t) => {
  const body = { ...base, system: [{ type: 'text', text: 'You are terse.' }], messages: [{ role: 'user', content: 'Explain BPE in one line. ' .repeat(20) }] };
  const first = await estimate(body);
  for (let i = 0; i < 5; i++) t.equal(await estimate(structuredClone(body)), first);
});

t.test('monotone: adding words, blocks, messages, a system prompt or tools never lowers the estimate', async (t) => {
  // A seeded generator, so a failure can be replayed.
  let seed = 12345;
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % n;
  };
  const words = ['the', 'quick', 'brown', 'fox', 'jumps', 'über', '東京', 'tokenization', '42', '!', '\n', 'emoji🙂', 'a', 'indivisible', '<|endoftext|>'];
  const body: any = { model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 'start' }] }] };
  let previous = await estimate(body);
  for (let step = 0; step < 200; step++) {
    const last = body.messages[body.messages.length - 1];
    switch (rand(6)) {
      case 0:
      case 1: {
        const block = last.content[last.content.length - 1];
        block.text += ' ' + words[rand(words.length)];
        break;
      }
      case 2:
        last.content.push({ type: 'text', text: words[rand(words.length)] });
        break;
      case 3:
        body.messages.push({ role: body.messages.length % 2 ? 'assistant' : 'user', content: [{ type: 'text', text: words[rand(words.length)] }] });
        break;
      case 4:
        body.system = (body.system ?? '') + ' ' + words[rand(words.length)];
        break;
      case 5:
        (body.tools ??= []).push({ name: `tool_${step}`, description: words[rand(words.length)] });
        break;
    }
    const next = await estimate(body);
    if (next < previous) {
      t.fail(`step ${step}: ${next} < ${previous} for ${JSON.stringify(body).slice(0, 300)}`);
      return;
    }
    previous = next;
  }
  t.pass('200 additions, never fewer tokens');
});

t.test('a large body through the pool: decoded and counted in one task, the same estimate as inline', async (t) => {
  const pool = new OffloadPool(1, 1, 64);
  t.teardown(() => pool.close());
  const body = { ...base, messages: Array.from({ length: 300 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `turn ${i}: ` + 'lorem ipsum dolor '.repeat(40) })) };
  const raw = Buffer.from(JSON.stringify(body));
  const pooled = await pool.decodeLocal('count_tokens', Buffer.from(raw));
  t.ok(pooled.ok);
  if (!pooled.ok) return;
  const decoded = pooled.decoded as ReturnType<typeof decodeCountTokens>;
  t.same(decoded.texts, [], 'only numbers crossed back');
  t.equal(estimateOf(decoded), await estimate(body));
  const refused = await pool.decodeLocal('count_tokens', Buffer.from(JSON.stringify({ ...base, max_tokens: 5 })));
  t.match(refused, { ok: false, code: 'invalid_request', param: 'max_tokens', message: /^`max_tokens` is not a member/ });
  t.same(await pool.decodeLocal('count_tokens', Buffer.from('{not json')), { ok: false, code: 'invalid_json', param: null });
});
