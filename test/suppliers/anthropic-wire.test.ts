// The anthropic-compatible wire: messages live at {base_url}/messages (base
// URLs end in /v1), the credential goes in x-api-key (never as a bearer), and
// every request names the API version.
import t from 'tap';
import type { Supplier } from '../../src/catalog/types.js';
import { wireFor } from '../../src/suppliers/wire.js';

const wire = wireFor('anthropic-compatible');
const supplier = (credentialEnv: string | null): Supplier => ({
  id: 's', name: 'anthropic', wireProtocol: 'anthropic-compatible', baseUrl: 'https://api.example.com/v1', credentialEnv, protocols: ['native_messages'],
});

t.test('path: only the messages protocol, at /messages', async (t) => {
  t.equal(wire.path('native_messages'), '/messages');
  t.equal(wire.path('chat_completions'), null, 'no chat on this wire');
});

t.test('headers: x-api-key from the named environment variable, anthropic-version, JSON', async (t) => {
  process.env.TOLLGATE_TEST_ANTHROPIC_KEY = 'secret-value';
  t.teardown(() => delete process.env.TOLLGATE_TEST_ANTHROPIC_KEY);
  const h = wire.headers(supplier('TOLLGATE_TEST_ANTHROPIC_KEY'));
  t.equal(h['x-api-key'], 'secret-value');
  t.equal(h['anthropic-version'], '2023-06-01');
  t.equal(h['content-type'], 'application/json');
  t.notOk('authorization' in h, 'never a bearer');
  t.notOk('x-api-key' in wire.headers(supplier(null)), 'no credential configured: none sent');
});
