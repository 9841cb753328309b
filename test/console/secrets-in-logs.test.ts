// Secrets never reach the logs: the whole standard output and error of a
// gateway (at the most verbose level) through create, repeat, use (well and
// badly presented), edit, revoke and use after revocation, from the console
// API and from the `tollgate` command, holds no secret nor any piece of one.
import t from 'tap';
import { hashKey } from '../../src/auth/key-format.js';
import { startGateway, type Gateway } from '../helpers/gateway.js';
import { testDatabase } from '../helpers/services.js';
import { ADMIN, ADMIN_TOKEN, bearer, call, createOrg, sleep, tollgate } from './keys-helpers.js';

let gw: Gateway;
let dbUrl: string;

t.before(async () => {
  const url = await testDatabase(t);
  if (url === null) return;
  dbUrl = url;
  gw = await startGateway({ env: { DATABASE_URL: url, ADMIN_TOKEN, LOG_LEVEL: 'trace' }, workers: 2 });
});
t.teardown(() => gw?.stop());

/** Every way a secret could show up: whole, its random part, any 12-character window of it, its hash. */
function traces(secret: string): string[] {
  const random = secret.slice(6);
  const out = [secret, random, hashKey(secret).toString('hex'), hashKey(secret).toString('base64')];
  for (let i = 0; i + 12 <= random.length; i++) out.push(random.slice(i, i + 12));
  return out;
}

async function use(secret: string): Promise<number[]> {
  const statuses: number[] = [];
  for (const headers of [bearer(secret), { authorization: `bearer ${secret}` }, { 'x-api-key': secret }, { cookie: `key=${secret}` }]) {
    statuses.push((await call(gw.url, 'GET', '/v1/key', headers)).status);
  }
  statuses.push((await call(gw.url, 'GET', `/v1/key?api_key=${secret}`)).status);
  return statuses;
}

t.test('create / use / edit / revoke / use again: no secret in the log stream', async (t) => {
  const orgId = await createOrg(dbUrl);
  const secrets: string[] = [];

  // Console API.
  const created = await call(gw.url, 'POST', `/console/v1/organizations/${orgId}/keys`, { ...ADMIN, 'idempotency-key': 'log-test' }, { name: 'console key' });
  t.equal(created.status, 201);
  secrets.push(created.json.secret);
  t.equal((await call(gw.url, 'POST', `/console/v1/organizations/${orgId}/keys`, { ...ADMIN, 'idempotency-key': 'log-test' }, { name: 'console key' })).status, 200);
  await sleep(50);
  t.same(await use(created.json.secret), [200, 200, 401, 401, 401]);
  t.equal((await call(gw.url, 'PATCH', `/console/v1/keys/${created.json.id}`, ADMIN, { version: 1, name: 'renamed' })).status, 200);
  // A refused request whose body carries a secret (invalid JSON, then an unknown member).
  t.equal((await call(gw.url, 'POST', `/console/v1/organizations/${orgId}/keys`, ADMIN, `{"name": "${created.json.secret}"`)).status, 400);
  t.equal((await call(gw.url, 'POST', `/console/v1/organizations/${orgId}/keys`, ADMIN, { name: 'x', secret: created.json.secret })).status, 400);
  t.equal((await call(gw.url, 'POST', `/console/v1/keys/${created.json.id}/revoke`, ADMIN)).status, 200);
  await sleep(50);
  t.same(await use(created.json.secret), [401, 401, 401, 401, 401]);

  // The tollgate command (its own output shows the secret once, by design; the gateway's must not).
  const cli = await tollgate(['keys', 'create', orgId, '--name', 'cli key', '--json'], { DATABASE_URL: dbUrl });
  t.equal(cli.code, 0, cli.stderr);
  const cliKey = JSON.parse(cli.stdout);
  secrets.push(cliKey.secret);
  await sleep(100);
  t.equal((await use(cliKey.secret))[0], 200);
  t.equal((await tollgate(['keys', 'revoke', cliKey.id], { DATABASE_URL: dbUrl })).code, 0);
  await sleep(100);
  t.equal((await use(cliKey.secret))[0], 401);

  t.equal(await gw.stop(), 0);
  const output = gw.output();
  t.ok(gw.logs.filter((l) => l.msg === 'request' && l.org === orgId).length >= 5, 'the log did record the calls');
  for (const secret of secrets) {
    const leaks = traces(secret).filter((s) => output.includes(s));
    t.same(leaks, [], `no trace of ${secret.slice(0, 12)}… in ${output.length} bytes of output`);
  }
});
