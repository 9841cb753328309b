// The anthropic-compatible wire: messages live at {base_url}/messages (base
// URLs end in /v1), the credential goes in x-api-key (never as a bearer), and
// every request names the API version.
import t from 'tap';
import { wireFor } from '../../src/suppliers/wire.js';

const wire = wireFor('anthropic-compatible');

t.test('path: only the messages protocol, at /messages', async (t) => {
  t.equal(wire.path('native_messages'), '/messages');
  t.equal(wire.path('chat_completions'), null, 'no chat on this wire');
});

t.test('headers: the credential in x-api-key, anthropic-version, JSON', async (t) => {
  const h = wire.headers('secret-value');
  t.equal(h['x-api-key'], 'secret-value');
  t.equal(h['anthropic-version'], '2023-06-01');
  t.equal(h['content-type'], 'application/json');
  t.notOk('authorization' in h, 'never a bearer');
  t.notOk('x-api-key' in wire.headers(null), 'no credential configured: none sent');
});
