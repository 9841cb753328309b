// POST /v1/embeddings request rules, one by one (spec: the member table of
// POST /v1/embeddings and its rules), against the surface's pure prepare().
import t from 'tap';
import type { Route } from '../../../src/catalog/types.js';
import { GatewayError } from '../../../src/errors/gateway-error.js';
import { embeddingsCodec } from '../../../src/surfaces/embeddings/codec.js';
import { modelCallNamed } from '../../../src/surfaces/index.js';

const base = { model: 'embed', input: ['hello', 'world'], encoding_format: 'base64' };
const route = { upstreamModel: 'embed-1', priority: 1, supplier: {} } as unknown as Route;

function refusedParam(body: unknown): string | null {
  try {
    embeddingsCodec.prepare(body, 100);
    return null;
  } catch (err) {
    if (!(err instanceof GatewayError) || err.code !== 'invalid_request') throw err;
    return err.param ?? '(body)';
  }
}

t.test('the pool runs the same preparer (the registry, surfaces/index.ts)', async (t) => {
  t.equal(modelCallNamed('embeddings').prepare, embeddingsCodec.prepare);
});

t.test('encoding_format: float refused by name', async (t) => {
  t.equal(refusedParam({ ...base, encoding_format: 'float' }), 'encoding_format');
});

t.test('encoding_format: absent (implies float) refused by name', async (t) => {
  const { encoding_format: _e, ...noFormat } = base;
  t.equal(refusedParam(noFormat), 'encoding_format');
  t.equal(refusedParam({ model: 'embed' }), 'encoding_format', 'named first when several members are missing');
});

t.test('encoding_format: any other value refused by name', async (t) => {
  for (const v of ['BASE64', 'binary', '', null, 1, ['base64']]) t.equal(refusedParam({ ...base, encoding_format: v }), 'encoding_format', JSON.stringify(v));
  t.equal(refusedParam(base), null, 'base64 accepted');
});

t.test('input: an array of strings (a bare string, numbers, token arrays, empty refused)', async (t) => {
  t.equal(refusedParam({ ...base, input: 'hello' }), 'input');
  t.equal(refusedParam({ ...base, input: [] }), 'input');
  t.equal(refusedParam({ ...base, input: [1, 2, 3] }), 'input[0]');
  t.equal(refusedParam({ ...base, input: [[1, 2]] }), 'input[0]');
  t.equal(refusedParam({ ...base, input: ['ok', ''] }), 'input[1]');
  const { input: _i, ...noInput } = base;
  t.equal(refusedParam(noInput), 'input');
});

t.test('input: at most 128 members', async (t) => {
  t.equal(refusedParam({ ...base, input: new Array(128).fill('x') }), null, '128 accepted');
  t.equal(refusedParam({ ...base, input: new Array(129).fill('x') }), 'input', '129 refused');
});

t.test('input: at most 131072 bytes in total (UTF-8)', async (t) => {
  t.equal(refusedParam({ ...base, input: ['a'.repeat(65536), 'b'.repeat(65536)] }), null, 'exactly 131072 accepted');
  t.equal(refusedParam({ ...base, input: ['a'.repeat(65536), 'b'.repeat(65537)] }), 'input', 'one byte over refused');
  // 43691 × 3 bytes = 131073: under the limit in characters, over it in bytes.
  t.equal(refusedParam({ ...base, input: ['€'.repeat(43691)] }), 'input', 'counted in UTF-8 bytes, not characters');
  t.equal(refusedParam({ ...base, input: ['€'.repeat(43690)] }), null);
});

t.test('stream does not exist here, nor any member outside the table', async (t) => {
  t.equal(refusedParam({ ...base, stream: false }), 'stream');
  t.equal(refusedParam({ ...base, dimensions: 0 }), 'dimensions');
  t.equal(refusedParam({ ...base, dimensions: 65537 }), 'dimensions');
  t.equal(refusedParam({ ...base, encoding_format: 'float' }), 'encoding_format', 'float stays refused (spec)');
});

t.test('issue 31 item 6: dimensions and user are accepted and carried', async (t) => {
  t.equal(refusedParam({ ...base, dimensions: 256, user: 'u' }), null);
  const up = JSON.parse(embeddingsCodec.upstreamBody(embeddingsCodec.prepare({ ...base, dimensions: 256, user: 'u' }, 10), { upstreamModel: 'up' } as any, null));
  t.same([up.dimensions, up.user], [256, 'u']);
  t.equal(refusedParam({ ...base, model: '' }), 'model');
  t.equal(refusedParam({ ...base, model: 5 }), 'model');
});

t.test('bound: input bytes only, no output bound, no image units', async (t) => {
  const p = embeddingsCodec.prepare({ ...base, input: ['héllo', 'world'] }, 999);
  t.same(p.decoded.bound, { inputTokens: 11, mediaTokens: 0, turns: 2, statedCeiling: null, ceilingParam: 'input', defaultCeiling: 0, choices: 0, imageUnits: 0 });
  t.same([p.decoded.model, p.decoded.stream], ['embed', false]);
});

t.test('upstream body: the upstream model, base64 asked for, the inputs as sent', async (t) => {
  const p = embeddingsCodec.prepare(base, 100);
  t.same(JSON.parse(embeddingsCodec.upstreamBody(p, route, null)), { model: 'embed-1', input: ['hello', 'world'], encoding_format: 'base64' });
  t.equal(embeddingsCodec.inputText(p), 'hello\nworld');
});
