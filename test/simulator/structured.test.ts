// Issue 31 item 9: the simulator answers a JSON schema with JSON that
// conforms to it, the same each time, cut into one piece per output token.
import { Ajv } from 'ajv';
import t from 'tap';
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
