// Issue 13 item 4: an unknown path under a model surface's prefix answers 404
// in that surface's envelope (a caller of one SDK reads its own error shape),
// not in the REST envelope; the prefixes come from the model routes
// themselves. Known routes keep their answers; other unknown paths stay REST.
import t from 'tap';
import { startGateway } from '../helpers/gateway.js';
import { chatEnvelopeFault, embeddingsEnvelopeFault, imagesEnvelopeFault, messagesEnvelopeFault, restEnvelopeFault } from '../helpers/envelopes.js';
import { testDatabase } from '../helpers/services.js';

const db = await testDatabase(t);
if (db !== null) {
  const gw = await startGateway({ env: { DATABASE_URL: db } });
  t.teardown(() => gw.stop());
  const call = async (method: string, path: string) => {
    const res = await fetch(gw.url + path, { method, headers: { 'content-type': 'application/json' }, body: method === 'GET' ? undefined : '{}' });
    return { status: res.status, rid: res.headers.get('x-request-id') ?? undefined, body: (await res.json()) as any };
  };

  const CASES: Array<[string, string, (b: any) => string | null]> = [
    ['POST', '/v1/messages/nope', messagesEnvelopeFault],
    ['GET', '/v1/messages/count_tokens/x', messagesEnvelopeFault],
    ['POST', '/v1/chat/nope', chatEnvelopeFault],
    ['POST', '/v1/chat/completions/x', chatEnvelopeFault],
    ['POST', '/v1/responses/x', chatEnvelopeFault],
    ['POST', '/v1/embeddings/x', embeddingsEnvelopeFault],
    ['POST', '/v1/images/x', imagesEnvelopeFault],
  ];

  t.test('item 4: unknown paths under a surface prefix answer 404 in that surface envelope', async (t) => {
    for (const [method, path, fault] of CASES) {
      const { status, rid, body } = await call(method, path);
      t.equal(status, 404, `${method} ${path}: 404`);
      t.equal(fault(body), null, `${method} ${path}: the surface envelope (${JSON.stringify(body)})`);
      t.not(restEnvelopeFault(body, rid), null, `${method} ${path}: not the REST envelope`);
    }
    const { body } = await call('POST', '/v1/messages/nope');
    t.equal(body.error.type, 'not_found_error');
  });

  t.test('item 4: known routes and other unknown paths answer as before', async (t) => {
    const tokens = await call('POST', '/v1/messages/count_tokens');
    t.equal(tokens.status, 401, 'count_tokens is still routed (no key: 401)');
    t.equal(messagesEnvelopeFault(tokens.body), null);
    t.equal((await call('GET', '/v1/messages')).status, 405, 'a known path with the wrong method: 405');
    const edits = await call('POST', '/v1/images/edits');
    t.equal(edits.status, 404);
    t.equal(imagesEnvelopeFault(edits.body), null);
    for (const path of ['/v1/nope', '/v1/models/x', '/nope']) {
      const { status, rid, body } = await call('GET', path);
      t.equal(status, 404, path);
      t.equal(restEnvelopeFault(body, rid), null, `${path}: the REST envelope`);
    }
  });
}
