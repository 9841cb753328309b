// Issue 12 item 4: the console read and parsed request bodies (up to 8 MiB,
// deeply nested) before it checked the admin token, so an unauthenticated
// caller got 400/415/413 answers that told it the route exists, and could
// hold a worker's loop with a deep body. Authenticate first, parse after: an
// unauthenticated console call gets the same 401 whatever it sends.
import t from 'tap';
import { startGateway } from '../helpers/gateway.js';
import { ADMIN_TOKEN } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';
import { rawRequest } from '../helpers/workers.js';

const ORG = '00000000-0000-4000-8000-000000000001';
const KEY = '00000000-0000-4000-8000-000000000002';
/** Every console route (src/console/*-routes.ts), with ids filled in. */
const CONSOLE: Array<[string, string]> = [
  ['POST', '/console/v1/organizations'],
  ['GET', `/console/v1/organizations/${ORG}`],
  ['PATCH', `/console/v1/organizations/${ORG}`],
  ['POST', `/console/v1/organizations/${ORG}/credits`],
  ['GET', `/console/v1/organizations/${ORG}/usage`],
  ['POST', `/console/v1/organizations/${ORG}/keys`],
  ['GET', `/console/v1/organizations/${ORG}/keys`],
  ['GET', `/console/v1/keys/${KEY}`],
  ['PATCH', `/console/v1/keys/${KEY}`],
  ['POST', `/console/v1/keys/${KEY}/revoke`],
  // A method the path does not accept: the refusal is still the 401, not a 405 that confirms the path.
  ['DELETE', '/console/v1/organizations'],
];

const MIB = 1024 * 1024;
/**
 * `headOnly`: the head announces the body and the body is not sent: the
 * answer must come from the head alone (a server that closes with body bytes
 * unread makes the client's kernel drop the answer on the reset, so a test
 * that sent them would be flaky, not stricter).
 */
const BODIES: Array<{ name: string; type: string | null; body: Buffer; chunked?: boolean; headOnly?: boolean }> = [
  { name: 'no body', type: null, body: Buffer.alloc(0) },
  { name: 'a valid body', type: 'application/json', body: Buffer.from('{"name":"x","balance":"1.00"}') },
  { name: 'bad JSON', type: 'application/json', body: Buffer.from('{"name": ') },
  { name: 'wrong content type', type: 'text/plain', body: Buffer.from('{"name":"x"}') },
  { name: 'no content type', type: null, body: Buffer.from('{"name":"x"}') },
  { name: '8 MiB + 1', type: 'application/json', body: Buffer.alloc(8 * MIB + 1, 0x20), headOnly: true },
  { name: '8 MiB + 1, chunked', type: 'application/json', body: Buffer.alloc(8 * MIB + 1, 0x20), chunked: true, headOnly: true },
  { name: '100k nested arrays', type: 'application/json', body: Buffer.from('{"name":' + '['.repeat(100_000) + ']'.repeat(100_000) + '}') },
];
const CREDENTIALS: Array<[string, string | null]> = [
  ['no Authorization', null],
  ['a wrong token', 'Bearer not-the-admin-token-0123456789'],
  ['the token without Bearer', ADMIN_TOKEN],
  ['the token with a suffix', `Bearer ${ADMIN_TOKEN}x`],
  ['a key instead', 'Bearer tg_sk_0000000000000000000000000000000000000000000'],
];

function head(method: string, path: string, auth: string | null, type: string | null, length: number, chunked: boolean): string {
  let h = `${method} ${path} HTTP/1.1\r\nHost: x`;
  if (auth !== null) h += `\r\nAuthorization: ${auth}`;
  if (type !== null) h += `\r\nContent-Type: ${type}`;
  h += chunked ? '\r\nTransfer-Encoding: chunked' : `\r\nContent-Length: ${length}`;
  return h;
}

function chunk(body: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n0\r\n\r\n')]);
}

const db = await testDatabase(t);
if (db !== null) {
  const gw = await startGateway({ env: { DATABASE_URL: db, ADMIN_TOKEN } });
  t.teardown(() => gw.stop());

  t.test('issue 12 item 4: an unauthenticated console call gets the same 401 whatever its body', async (t) => {
    const seen = new Set<string>();
    for (const [method, path] of CONSOLE) {
      for (const [who, auth] of CREDENTIALS) {
        for (const b of BODIES) {
          const what = `${method} ${path.replace(/[0-9a-f-]{36}/g, ':id')} with ${who}, ${b.name}`;
          const started = performance.now();
          const sent = b.headOnly ? '' : b.chunked ? chunk(b.body) : b.body;
          const answer = await rawRequest(gw.port, head(method, path, auth, b.type, b.body.length, b.chunked === true), sent, 5000);
          t.equal(answer.status, 401, `${what}: 401`);
          t.equal(answer.headers['www-authenticate'], 'Bearer', `${what}: WWW-Authenticate`);
          const body = JSON.parse(answer.body || '{}');
          t.equal(body.error?.code, 'invalid_api_key', `${what}: invalid_api_key`);
          t.equal(body.error?.request_id, answer.headers['x-request-id']);
          // Identical but for the request id.
          seen.add(answer.body.replace(/req_[0-9a-f]+/, 'req_'));
          t.ok(performance.now() - started < 5000, `${what}: answered at once`);
        }
      }
    }
    t.equal(seen.size, 1, 'one and the same answer for every call');
  });

  t.test('issue 12 item 4: with the token, bodies are still judged (after the check)', async (t) => {
    const auth = `Bearer ${ADMIN_TOKEN}`;
    const post = (type: string | null, body: Buffer, headOnly = false) => rawRequest(gw.port, head('POST', '/console/v1/organizations', auth, type, body.length, false), headOnly ? '' : body);
    t.equal((await post('application/json', Buffer.from('{"name": '))).status, 400, 'bad JSON: 400');
    t.equal((await post('text/plain', Buffer.from('{}'))).status, 415, 'wrong type: 415');
    t.equal((await post('application/json', Buffer.alloc(8 * MIB + 1, 0x20), true)).status, 413, 'too large: 413');
    const deep = await post('application/json', Buffer.from('{"name":' + '['.repeat(100_000) + ']'.repeat(100_000) + '}'));
    t.equal(deep.status, 400, 'deep: 400');
    t.equal(JSON.parse(deep.body).error.code, 'nesting_too_deep');
    const ok = await post('application/json', Buffer.from('{"name":"auth order","balance":"1.00"}'));
    t.equal(ok.status, 201, 'a valid body: 201');
  });
}
