// Request bodies: size limit (413 before the body is buffered), bad JSON,
// missing Content-Type — each answered in the envelope of the surface called.
// A model call checks its key first (issue 30 item 3): these limits are what
// a caller with a live key meets; without one, the 401 comes before them.
import { connect } from 'node:net';
import t from 'tap';
import { startGateway } from '../helpers/gateway.js';
import { ADMIN_TOKEN, provision } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';

const db = await testDatabase(t);
if (db !== null) {
  const gw = await startGateway({ env: { DATABASE_URL: db, ADMIN_TOKEN, MAX_BODY_BYTES: '65536' } });
  t.teardown(() => gw.stop());

  const post = (path: string, body: string | Buffer, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
    fetch(`${gw.url}${path}`, { method: 'POST', headers: { authorization: 'Bearer tg_sk_x', ...headers }, body });

  const chat = '/v1/chat/completions';
  const consolePath = '/console/v1/organizations';
  const { key: live } = await provision(gw.url);
  const liveJson = { 'content-type': 'application/json', authorization: `Bearer ${live}` };

  t.test('a body over the limit: 413 in the chat envelope', async (t) => {
    const res = await post(chat, Buffer.alloc(70_000, 0x20), liveJson);
    t.equal(res.status, 413);
    const body: any = await res.json();
    t.same(Object.keys(body.error).sort(), ['code', 'message', 'param', 'type']);
    t.equal(body.error.code, 'body_too_large');
    t.equal(body.error.type, 'invalid_request_error');
  });

  t.test('a body over the limit: 413 in the REST envelope on the console', async (t) => {
    const res = await fetch(`${gw.url}${consolePath}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: Buffer.alloc(70_000, 0x20),
    });
    t.equal(res.status, 413);
    const body: any = await res.json();
    t.equal(body.error.code, 'body_too_large');
    t.equal(body.error.request_id, res.headers.get('x-request-id'));
  });

  t.test('413 is sent from Content-Length, before the body is sent at all', async (t) => {
    const socket = connect(gw.port, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    socket.write(`POST ${chat} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${live}\r\nContent-Type: application/json\r\nContent-Length: 10000000\r\n\r\n`);
    const head = await new Promise<string>((resolve) => socket.once('data', (d) => resolve(d.toString())));
    t.match(head, /^HTTP\/1\.1 413 /);
    socket.destroy();
    // Without a live key the refusal is the 401, from the headers alone too.
    const bogus = connect(gw.port, '127.0.0.1');
    await new Promise((r) => bogus.once('connect', r));
    bogus.write(`POST ${chat} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tg_sk_x\r\nContent-Type: application/json\r\nContent-Length: 10000000\r\n\r\n`);
    t.match(await new Promise<string>((resolve) => bogus.once('data', (d) => resolve(d.toString()))), /^HTTP\/1\.1 401 /);
    bogus.destroy();
  });

  t.test('a chunked body crossing the limit is cut off while it streams', async (t) => {
    const socket = connect(gw.port, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    socket.write(`POST ${chat} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${live}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`);
    const answer = new Promise<string>((resolve) => socket.once('data', (d) => resolve(d.toString())));
    const chunk = 'x'.repeat(16_384);
    for (let i = 0; i < 6; i++) socket.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
    t.match(await answer, /^HTTP\/1\.1 413 /, 'answered without the terminating chunk ever being sent');
    socket.destroy();
  });

  t.test('invalid JSON: 400 invalid_json in the chat envelope and the REST envelope', async (t) => {
    const { key } = await provision(gw.url);
    const unauthenticated = await post(chat, '{"model": ');
    t.equal(unauthenticated.status, 401, 'a model call is authenticated before its body is parsed');
    const res = await post(chat, '{"model": ', { 'content-type': 'application/json', authorization: `Bearer ${key}` });
    t.equal(res.status, 400);
    const body: any = await res.json();
    t.equal(body.error.code, 'invalid_json');
    t.equal(body.error.type, 'invalid_request_error');
    const rest = await fetch(`${gw.url}${consolePath}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: 'nope',
    });
    t.equal(rest.status, 400);
    const rb: any = await rest.json();
    t.equal(rb.error.code, 'invalid_json');
    t.equal(rb.error.version, '2026-11-01');
  });

  t.test('large bodies are parsed and validated in the worker-thread pool, with the same answers', async (t) => {
    const { key } = await provision(gw.url);
    const auth = { 'content-type': 'application/json', authorization: `Bearer ${key}` };
    const big = 'lorem '.repeat(8000); // ~48 KB: over OFFLOAD_BODY_BYTES (16 KB), under MAX_BODY_BYTES (64 KB)
    const ok = await post(chat, JSON.stringify({ model: 'nw-swift-1', messages: [{ role: 'user', content: big + ' [sim:words=3]' }] }), auth);
    t.equal(ok.status, 200);
    const reply: any = await ok.json();
    t.equal(reply.model, 'nw-swift-1');
    t.ok(reply.usage.prompt_tokens > 8000, 'the supplier saw the whole body');
    const bad = await post(chat, JSON.stringify({ model: 'nw-swift-1', stop: 'END', messages: [{ role: 'user', content: big }] }), auth);
    t.equal(bad.status, 400);
    t.equal(((await bad.json()) as any).error.param, 'stop');
    const broken = await post(chat, '{"model":"nw-swift-1","messages":[' + '"x",'.repeat(9000), auth);
    t.equal(broken.status, 400);
    t.equal(((await broken.json()) as any).error.code, 'invalid_json');
  });

  t.test('POST without Content-Type: application/json → 415', async (t) => {
    const res = await post(chat, '{}', { 'content-type': 'text/plain', authorization: `Bearer ${live}` });
    t.equal(res.status, 415);
    const body: any = await res.json();
    t.equal(body.error.code, 'unsupported_media_type');
    const ok = await post(chat, '{}', { 'content-type': 'application/json; charset=utf-8', authorization: `Bearer ${live}` });
    t.not(ok.status, 415, 'a charset parameter is fine');
  });

  t.test('the console answers 404 for every path without ADMIN_TOKEN configured', async (t) => {
    const bare = await startGateway({ env: { DATABASE_URL: db } });
    const res = await fetch(`${bare.url}${consolePath}`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: '{}' });
    t.equal(res.status, 404);
    t.equal(((await res.json()) as any).error.code, 'not_found');
    await bare.stop();
  });
}
