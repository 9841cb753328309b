// What the console and the CLI accept when creating and editing keys.
import t from 'tap';
import { createRequestHash, parseCreateInput, parseEditInput } from '../../src/auth/key-input.js';
import { GatewayError } from '../../src/errors/gateway-error.js';

const MODEL = '20000000-0000-4000-8000-000000000001';
const VENDOR = '10000000-0000-4000-8000-000000000002';

function refusal(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

t.test('create: defaults', async (t) => {
  t.same(parseCreateInput({ name: ' ci ' }), { name: 'ci', scope: null, binding: 'organization', funding: 'balance', expiresAt: null, quotaPerMinute: null });
});

t.test('create: every member', async (t) => {
  const future = new Date(Date.now() + 86_400_000).toISOString();
  const input = parseCreateInput({
    name: 'n',
    scope: { modality_codes: ['text_generation', 'embeddings', 'text_generation'], model_ids: [MODEL.toUpperCase()], vendor_ids: [VENDOR] },
    binding: 'team-7',
    funding: 'package',
    expires_at: future,
  });
  t.same(input.scope, { modality_codes: ['embeddings', 'text_generation'], model_ids: [MODEL], vendor_ids: [VENDOR] }, 'deduplicated, sorted, lower-case');
  t.equal(input.binding, 'team-7');
  t.equal(input.funding, 'package');
  t.equal(input.expiresAt, future);
});

t.test('unrestricted: "unrestricted", null and {} all mean no scope', async (t) => {
  for (const scope of ['unrestricted', null, {}]) t.equal(parseCreateInput({ name: 'n', scope }).scope, null, JSON.stringify(scope));
});

t.test('create refusals name every member at fault', async (t) => {
  const err = refusal(() =>
    parseCreateInput({ name: '', scope: { model_ids: [], vendor_ids: ['nope'], colour: ['x'] }, funding: 'card', expires_at: '2001-01-01T00:00:00Z', extra: 1 }),
  );
  t.equal(err.code, 'invalid_request');
  t.equal(err.status, 400);
  const fields = err.fieldDetails!.map((d) => d.field).sort();
  t.same(fields, ['expires_at', 'extra', 'funding', 'name', 'scope.colour', 'scope.model_ids', 'scope.vendor_ids[0]']);
  t.equal(refusal(() => parseCreateInput([])).fieldDetails![0].field, '(body)');
  t.equal(refusal(() => parseCreateInput({ name: 'n', scope: ['text_generation'] })).fieldDetails![0].field, 'scope');
  t.equal(refusal(() => parseCreateInput({ name: 'n', expires_at: 'tomorrow' })).fieldDetails![0].field, 'expires_at');
});

t.test('edit: version required, binding immutable (422), nothing to change refused', async (t) => {
  t.same(parseEditInput({ version: 3, name: 'x', scope: 'unrestricted' }), { version: 3, name: 'x', scope: null });
  const bound = refusal(() => parseEditInput({ version: 1, binding: 'other' }));
  t.equal(bound.code, 'immutable_field');
  t.equal(bound.status, 422);
  t.same(bound.fieldDetails, [{ field: 'binding', issue: 'is fixed when the key is created and cannot be edited' }]);
  t.equal(refusal(() => parseEditInput({ name: 'x' })).fieldDetails![0].field, 'version');
  t.equal(refusal(() => parseEditInput({ version: '1', name: 'x' })).fieldDetails![0].field, 'version');
  t.equal(refusal(() => parseEditInput({ version: 1 })).fieldDetails![0].field, '(body)');
  t.equal(refusal(() => parseEditInput({ version: 1, status: 'revoked' })).fieldDetails![0].field, 'status');
  t.same(parseEditInput({ version: 1, expires_at: null }), { version: 1, expiresAt: null }, 'null clears the expiry');
});

t.test('the idempotency hash compares normalized requests', async (t) => {
  const a = createRequestHash(parseCreateInput({ name: 'n', scope: { modality_codes: ['embeddings', 'text_generation'] } }));
  const b = createRequestHash(parseCreateInput({ name: 'n', scope: { modality_codes: ['text_generation', 'embeddings'] }, binding: 'organization' }));
  const c = createRequestHash(parseCreateInput({ name: 'n2', scope: { modality_codes: ['embeddings', 'text_generation'] } }));
  t.ok(a.equals(b), 'order and defaults do not make a different request');
  t.notOk(a.equals(c));
});
