// Issue 31 item 9: the simulator answers a JSON schema with JSON that
// conforms to it, the same each time, cut into one piece per output token;
// on messages, a forced tool's input conforms to the tool's input_schema.
import Anthropic from '@anthropic-ai/sdk';
import { Ajv } from 'ajv';
import t from 'tap';
import { startSimulator } from '../../src/simulator/index.js';
import { structuredAnswer, tokenPieces } from '../../src/simulator/structured.js';
import { countTokens } from '../../src/simulator/tokens.js';

const ajv = new Ajv({ strict: false });

const schemas: Record<string, object> = {
  flat: {
    type: 'object', additionalProperties: false, required: ['name', 'age', 'ok', 'tags', 'kind'],
    properties: { name: { type: 'string' }, age: { type: 'integer', minimum: 3 }, ok: { type: 'boolean' }, tags: { type: 'array', items: { type: 'string' }, minItems: 2 }, kind: { enum: ['a', 'b'] } },
  },
  nested: {
    type: 'object', required: ['recipe'],
    properties: { recipe: { type: 'object', required: ['steps'], properties: { steps: { type: 'array', items: { type: 'object', properties: { n: { type: 'number', maximum: -5 } } } } } } },
  },
  refs: {
    $defs: { Point: { type: 'object', properties: { x: { type: 'number' } }, required: ['x'] } },
    type: 'object', properties: { p: { $ref: '#/$defs/Point' }, q: { anyOf: [{ type: 'null' }, { $ref: '#/$defs/Point' }] }, when: { type: 'string', format: 'date-time' }, long: { type: 'string', minLength: 30, maxLength: 40 } },
  },
  recursive: { type: 'object', properties: { child: { $ref: '#' }, label: { type: ['string', 'null'] } } },
};

t.test('chat json_schema and responses text.format answers conform, deterministically', async (t) => {
  for (const [name, schema] of Object.entries(schemas)) {
    const chat = structuredAnswer({ type: 'json_schema', json_schema: { name, schema, strict: true } })!;
    const responses = structuredAnswer({ type: 'json_schema', name, schema })!;
    t.equal(chat, responses, `${name}: the same on both surfaces`);
    t.equal(structuredAnswer({ type: 'json_schema', json_schema: { name, schema } }), chat, `${name}: deterministic`);
    const value = JSON.parse(chat);
    t.ok(ajv.validate(name === 'recursive' ? { ...schema, properties: { ...(schema as any).properties, child: { type: ['object', 'null'] } } } : schema, value), `${name}: conforms ${chat}`);
  }
});

t.test('json_object, plain text and malformed formats', async (t) => {
  t.same(JSON.parse(structuredAnswer({ type: 'json_object' })!), { answer: 'the quick brown fox' });
  t.equal(structuredAnswer({ type: 'text' }), null);
  t.equal(structuredAnswer(undefined), null);
  t.equal(structuredAnswer({ type: 'json_schema', json_schema: { name: 'x' } }), '{}', 'no schema: an empty object');
});

t.test('pieces: one per o200k token, joined they are the answer', async (t) => {
  const text = structuredAnswer({ type: 'json_schema', json_schema: { name: 'f', schema: schemas.flat } })!;
  const pieces = tokenPieces(text);
  t.equal(pieces.join(''), text);
  t.equal(pieces.length, countTokens(text), 'usage counts the tokens streamed');
});

t.test('messages: a forced tool (tool_choice tool or any) is called with an input that conforms to its input_schema, unary and stream', async (t) => {
  const sim = await startSimulator({ instances: ['alpha'] });
  t.teardown(() => sim.close());
  const client = new Anthropic({ apiKey: 'x', baseURL: `${sim.url}/alpha`, maxRetries: 0 });
  const schema = schemas.flat as Anthropic.Tool.InputSchema;
  const ask = {
    model: 'sim-msg', max_tokens: 256, messages: [{ role: 'user' as const, content: 'A record' }],
    tools: [{ name: 'other', input_schema: { type: 'object' as const } }, { name: 'record', input_schema: schema }],
    tool_choice: { type: 'tool' as const, name: 'record' },
  };
  const unary = await client.messages.create(ask);
  const use = unary.content[0] as Anthropic.ToolUseBlock;
  t.same([unary.stop_reason, use.type, use.name], ['tool_use', 'tool_use', 'record']);
  t.ok(ajv.validate(schema, use.input), `conforms: ${JSON.stringify(use.input)}`);
  const answer = structuredAnswer({ type: 'json_schema', schema })!;
  t.same(use.input, JSON.parse(answer), 'the same answer chat and responses give for the schema');
  t.equal(unary.usage.output_tokens, countTokens(answer), 'one output token per piece');
  const streamed = await client.messages.stream(ask).finalMessage();
  t.same((streamed.content[0] as Anthropic.ToolUseBlock).input, use.input, 'streamed as input_json_delta pieces, assembled the same');
  t.equal(streamed.usage.output_tokens, unary.usage.output_tokens);
  // Cut by max_tokens as text is: stop_reason max_tokens, the unary input empty.
  const cut = await client.messages.create({ ...ask, max_tokens: 3 });
  t.same([cut.stop_reason, (cut.content[0] as Anthropic.ToolUseBlock).input, cut.usage.output_tokens], ['max_tokens', {}, 3]);
  // tool_choice any: the first tool declared (the AI SDK's json tool is its only one).
  const any = await client.messages.create({ ...ask, tools: [...ask.tools].reverse(), tool_choice: { type: 'any' } });
  t.same([(any.content[0] as Anthropic.ToolUseBlock).name, (any.content[0] as Anthropic.ToolUseBlock).input], ['record', use.input]);
  // Without a forced tool, or with the [sim:tool] directive, nothing changes.
  const auto = await client.messages.create({ ...ask, tool_choice: { type: 'auto' } });
  t.equal(auto.content[0]!.type, 'text');
  const directed = await client.messages.create({ ...ask, messages: [{ role: 'user', content: 'x [sim:tool=other]' }] });
  t.same([(directed.content[0] as Anthropic.ToolUseBlock).name, (directed.content[0] as Anthropic.ToolUseBlock).input], ['other', { sim: true }]);
});
