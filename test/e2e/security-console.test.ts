// Issue 30 items 1, 6 and 9 against a running gateway with two workers: the
// sign-in limit counts a try before its password is checked (30 parallel
// wrong passwords: at most the limit are checked), it throttles per account
// and address together (a right password from elsewhere still signs in, the
// admin token too), X-Forwarded-For is believed only from a listed proxy and
// read right to left; and the console's query strings and cursors refuse
// made-up values with 400 naming them, never a 500 or an error in the log.
import t from 'tap';
import { startGateway, type Gateway } from '../helpers/gateway.js';
import { ADMIN_TOKEN, console_, provision } from '../helpers/provision.js';
import { call, cookieOf, signIn } from './security-helpers.js';

const LIMIT = 5; // web.sign_in_max_failures, the default
const PROXY = '127.0.0.3';
let gw: Gateway;
let orgId: string;

t.before(async () => {
  gw = await startGateway({ workers: 2, env: { ADMIN_TOKEN, TRUSTED_PROXIES: PROXY } });
  orgId = (await provision(gw.url, { name: 'Sign-in Co' })).orgId;
});
t.teardown(async () => {
  await gw?.stop();
});

const account = async (email: string, password: string) => {
  await console_(gw.url, 'POST', `/organizations/${orgId}/accounts`, { email, name: email.split('@')[0], password });
};

t.test('issue 30 item 1: concurrent wrong passwords are counted before they are checked (2 workers, 30 in parallel)', async (t) => {
  await account('par@signin.test', 'the right password 1');
  const answers = await Promise.all(
    Array.from({ length: 30 }, (_, i) => signIn(gw.url, { email: 'par@signin.test', password: `wrong password ${i}` }, '127.0.0.11')),
  );
  const statuses = answers.map((a) => a.status);
  const refused = statuses.filter((s) => s === 401).length;
  const limited = statuses.filter((s) => s === 429).length;
  t.equal(refused + limited, 30, `every answer is 401 or 429: ${statuses.join(' ')}`);
  t.ok(refused >= 1, 'some tries were checked');
  t.ok(refused <= LIMIT, `at most ${LIMIT} passwords checked, not ${refused}`);
  for (const a of answers.filter((x) => x.status === 429)) t.ok(Number(a.headers['retry-after']) > 0, 'a 429 says when to retry');
  const after = await signIn(gw.url, { email: 'par@signin.test', password: 'the right password 1' }, '127.0.0.11');
  t.equal(after.status, 429, 'the right password from that address waits out the window');
});

t.test('issue 30 item 6: a right password from another address still signs in; the admin token is not one global bucket', async (t) => {
  await account('cy@signin.test', 'the right password 2');
  for (let i = 0; i < LIMIT; i++) {
    t.equal((await signIn(gw.url, { email: 'cy@signin.test', password: `wrong ${i}` }, '127.0.0.21')).status, 401, `wrong password ${i + 1}`);
  }
  t.equal((await signIn(gw.url, { email: 'cy@signin.test', password: 'wrong again' }, '127.0.0.21')).status, 429, 'the guessing address is limited');
  const elsewhere = await signIn(gw.url, { email: 'cy@signin.test', password: 'the right password 2' }, '127.0.0.22');
  t.equal(elsewhere.status, 201, 'the person signs in from their own address');
  t.equal((await call(gw.url, 'GET', '/console/v1/sessions/current', { headers: { cookie: cookieOf(elsewhere) }, localAddress: '127.0.0.22' })).status, 200);
  t.equal((await signIn(gw.url, { email: 'cy@signin.test', password: 'the right password 2' }, '127.0.0.21')).status, 429, 'still limited at the guessing address');

  for (let i = 0; i < LIMIT; i++) {
    t.equal((await signIn(gw.url, { admin_token: `not-the-admin-token-${i}` }, '127.0.0.23')).status, 401, `wrong admin token ${i + 1}`);
  }
  t.equal((await signIn(gw.url, { admin_token: ADMIN_TOKEN }, '127.0.0.23')).status, 429, 'the guessing address is limited');
  t.equal((await signIn(gw.url, { admin_token: ADMIN_TOKEN }, '127.0.0.24')).status, 201, 'the operator signs in from elsewhere');
});

t.test('issue 30 item 6: behind a listed proxy the client is the rightmost X-Forwarded-For address that is not a proxy', async (t) => {
  await account('dee@signin.test', 'the right password 3');
  const via = (xff: string, password: string, peer = PROXY) => signIn(gw.url, { email: 'dee@signin.test', password }, peer, { 'x-forwarded-for': xff });
  for (let i = 0; i < LIMIT; i++) t.equal((await via('203.0.113.9', `wrong ${i}`)).status, 401, `wrong password ${i + 1} from 203.0.113.9`);
  t.equal((await via('203.0.113.9', 'wrong again')).status, 429, '203.0.113.9 is limited');
  t.equal((await via('203.0.113.10, 203.0.113.9', 'the right password 3')).status, 429, 'a client cannot pick its address by prepending one');
  t.equal((await via('203.0.113.10', 'the right password 3')).status, 201, 'another client behind the same proxy signs in');
  t.equal((await via('203.0.113.10, 127.0.0.3', 'the right password 3')).status, 201, 'listed proxies in the chain are skipped');
  // From a peer that is not a listed proxy the header is anyone's: ignored (believed, it would name the limited address).
  t.equal((await via('203.0.113.9', 'the right password 3', '127.0.0.25')).status, 201, 'X-Forwarded-For from a direct client is ignored');
});

t.test('issue 30 item 9: made-up query parameters and cursors are 400 naming them, never a 500', async (t) => {
  await account('eve@signin.test', 'the right password 4');
  const s = await signIn(gw.url, { email: 'eve@signin.test', password: 'the right password 4' }, '127.0.0.31');
  t.equal(s.status, 201);
  const member = { cookie: cookieOf(s) };
  const operator = { authorization: `Bearer ${ADMIN_TOKEN}` };
  const cursor = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const cases: Array<[string, Record<string, string>, string]> = [];
  for (const name of ['hasOwnProperty', '__proto__', 'valueOf', 'constructor', 'toString', '__defineGetter__']) {
    cases.push([`/organizations/${orgId}/usage?${name}=1`, member, name]);
    cases.push([`/organizations/${orgId}/usage/daily?${name}=1`, member, name]);
    cases.push([`/organizations/${orgId}/keys?${name}=1`, member, name]);
    cases.push([`/organizations?${name}=1`, operator, name]);
  }
  for (const bad of [['2020', 'x'], ['2020-02-30T00:00:00Z', 'req_x'], ['0000-01-01T00:00:00Z', 'req_x'], ['2020-01-01T00:00:00Z', 'x\u0000y'], ['2020-01-01T00:00:00Z', 7], 'x']) {
    cases.push([`/organizations/${orgId}/usage?cursor=${cursor(bad)}`, member, 'cursor']);
    cases.push([`/organizations/${orgId}/keys?cursor=${cursor(bad)}`, member, 'cursor']);
  }
  cases.push([`/organizations?cursor=${cursor(['2020-01-01T00:00:00.000000Z', 'not-a-uuid'])}`, operator, 'cursor']);
  cases.push([`/organizations?cursor=${cursor(['2020', '00000000-0000-4000-8000-000000000001'])}`, operator, 'cursor']);
  for (const [path, headers, param] of cases) {
    const r = await call(gw.url, 'GET', '/console/v1' + path, { headers, localAddress: '127.0.0.31' });
    t.equal(r.status, 400, `${path} → 400`);
    t.equal(r.body?.error?.code, 'invalid_request', `${path}: REST envelope`);
    t.equal(r.body?.error?.field_details?.[0]?.field, param, `${path} names ${param}`);
  }
  // A well-formed cursor still pages.
  const good = await call(gw.url, 'GET', `/console/v1/organizations?limit=1&cursor=${cursor(['2020-01-01T00:00:00.000000Z', '00000000-0000-4000-8000-000000000001'])}`, { headers: operator });
  t.equal(good.status, 200, 'a real cursor is accepted');
  const errors = gw.logs.filter((l) => typeof l.level === 'number' && l.level >= 50);
  t.same(errors, [], 'no error-level log line');
});
