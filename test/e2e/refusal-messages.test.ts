// Refusals a new user meets say what is wrong (issue 34 items 2 and 4):
// max_tokens above the model's maximum names the maximum, on every surface
// that takes an output bound; a 402 names what the call needed against what
// the organization has, and the output bound that would fit. A refusal never
// echoes a secret the caller sent in a bad member value.
import t from 'tap';
import { startGateway, type Gateway } from '../helpers/gateway.js';
import { ADMIN_TOKEN, provision } from '../helpers/provision.js';

let gw: Gateway;
t.before(async () => {
  gw = await startGateway({ env: { ADMIN_TOKEN, CURRENCY: 'EUR' } });
});
t.teardown(() => gw?.stop());

async function post(path: string, key: string, body: unknown): Promise<{ status: number; body: any }> {
  const r = await fetch(gw.url + path, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
}

t.test('issue 34 item 2: an output bound above the model maximum names the member and the maximum', async (t) => {
  const { key } = await provision(gw.url);
  const chat = await post('/v1/chat/completions', key, { model: 'nw-swift-1', max_tokens: 100000, messages: [{ role: 'user', content: 'hi' }] });
  t.equal(chat.status, 400);
  t.equal(chat.body.error.param, 'max_tokens');
  t.equal(chat.body.error.message, "max_tokens: 100000 is above this model's maximum of 32768 output tokens.");
  const messages = await post('/v1/messages', key, { model: 'ks-quill-1', max_tokens: 100000, messages: [{ role: 'user', content: 'hi' }] });
  t.equal(messages.status, 400);
  t.equal(messages.body.error.message, "max_tokens: 100000 is above this model's maximum of 16384 output tokens.");
  const responses = await post('/v1/responses', key, { model: 'au-atlas-2', max_output_tokens: 100000, input: 'hi' });
  t.equal(responses.status, 400);
  t.equal(responses.body.error.message, "max_output_tokens: 100000 is above this model's maximum of 65536 output tokens.");
});

t.test('issue 34 item 4: a 402 names what was needed, what is available, and the output bound that fits', async (t) => {
  const { key } = await provision(gw.url, { balance: '0.001' });
  const refused = await post('/v1/chat/completions', key, { model: 'nw-swift-1', messages: [{ role: 'user', content: 'hi' }] });
  t.equal(refused.status, 402);
  const message: string = refused.body.error.message;
  t.match(message, /^This call needs \d+\.\d+ EUR reserved \(its input and an output bound of 32768 tokens\), and the organization has 0\.001 EUR available from its balance\. /);
  const fits = Number(/of at most (\d+) tokens would fit/.exec(message)?.[1]);
  t.ok(fits > 0 && fits < 32768, `names a bound that fits: ${fits}`);
  const within = await post('/v1/chat/completions', key, { model: 'nw-swift-1', max_tokens: fits, messages: [{ role: 'user', content: 'hi' }] });
  t.equal(within.status, 200, 'and a call with that bound is served');
  const none = await provision(gw.url, { balance: '0.00' });
  const empty = await post('/v1/chat/completions', none.key, { model: 'nw-swift-1', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
  t.equal(empty.status, 402);
  t.match(empty.body.error.message, /has 0\.00 EUR available from its balance\. Add funds, or send a smaller request\.$/);
});

t.test('issue 34 item 2: a model-surface refusal names the member and never echoes a secret sent in its value', async (t) => {
  const { key } = await provision(gw.url);
  const supplierKey = 'sk-proj-Xq7vLr2NcP9wTz4BmK1sYd8Hf3Ga6Je0';
  const chat = { model: 'nw-swift-1', messages: [{ role: 'user', content: 'hi' }] };
  const cases: Array<[string, unknown, string]> = [
    ['/v1/chat/completions', { ...chat, temperature: key }, 'temperature'],
    ['/v1/chat/completions', { ...chat, stop: supplierKey }, 'stop'],
    ['/v1/chat/completions', { ...chat, verbosity: key }, 'verbosity'],
    ['/v1/chat/completions', { ...chat, messages: [{ role: supplierKey, content: 'hi' }] }, 'messages[0].role'],
    ['/v1/embeddings', { model: 'nw-embed-1', input: ['hi'], encoding_format: key }, 'encoding_format'],
    ['/v1/messages', { model: 'ks-quill-1', max_tokens: supplierKey, messages: [{ role: 'user', content: 'hi' }] }, 'max_tokens'],
  ];
  const secrets = [key.slice(6, 20), supplierKey.slice(8)];
  for (const [path, body, param] of cases) {
    const r = await fetch(gw.url + path, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const text = await r.text();
    t.equal(r.status, 400, `${path} ${param}: ${text}`);
    t.ok(JSON.parse(text).error.message.startsWith(`\`${param}\` `), `the message names ${param}`);
    t.notOk(secrets.some((s) => text.includes(s)), `no secret echoed: ${text}`);
  }
  // A secret where the model's name goes, and a key that is not one.
  const model = await post('/v1/chat/completions', key, { ...chat, model: supplierKey });
  t.equal(model.status, 404);
  t.notOk(JSON.stringify(model.body).includes(secrets[1]!), 'the unknown model is not echoed');
  const wrongKey = await post('/v1/chat/completions', `${key.slice(0, -4)}abcd`, chat);
  t.equal(wrongKey.status, 401);
  t.notOk(JSON.stringify(wrongKey.body).includes(secrets[0]!), 'the presented key is not echoed');
});
