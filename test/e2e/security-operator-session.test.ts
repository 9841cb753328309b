// Issue 30 item 7: an operator's console session is bound to the admin token
// it was exchanged for. Signed in with token A, the session is refused (401)
// once the gateway restarts with token B, or with no token, on the same data;
// a person's session is untouched by the change.
import { rmSync } from 'node:fs';
import t from 'tap';
import { startGateway, tempDir, type Gateway } from '../helpers/gateway.js';
import { call, cookieOf, signIn } from './security-helpers.js';

const TOKEN_A = 'operator-token-A-0123456789abcdef';
const TOKEN_B = 'operator-token-B-0123456789abcdef';

t.test('issue 30 item 7: an operator session made from admin token A is refused after a restart with token B or none', async (t) => {
  const dataDir = tempDir();
  let gw: Gateway | null = null;
  t.teardown(async () => {
    await gw?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const current = (cookie: string) => call(gw!.url, 'GET', '/console/v1/sessions/current', { headers: { cookie } });

  gw = await startGateway({ dataDir, env: { ADMIN_TOKEN: TOKEN_A } });
  const operator = await signIn(gw.url, { admin_token: TOKEN_A }, '127.0.0.41');
  t.equal(operator.status, 201, 'signed in with token A');
  const opCookie = cookieOf(operator);
  // A person's account, made by the operator's bearer token, and their session.
  const org = await fetch(`${gw.url}/console/v1/organizations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN_A}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Bound Co', balance: '1.00' }),
  }).then((r) => r.json() as Promise<{ id: string }>);
  const made = await call(gw.url, 'POST', `/console/v1/organizations/${org.id}/accounts`, {
    headers: { authorization: `Bearer ${TOKEN_A}` },
    body: { email: 'flo@bound.test', name: 'Flo', password: 'the right password' },
  });
  t.equal(made.status, 201, 'account made');
  const member = await signIn(gw.url, { email: 'flo@bound.test', password: 'the right password' }, '127.0.0.42');
  t.equal(member.status, 201);
  const memberCookie = cookieOf(member);
  t.equal((await current(opCookie)).status, 200, 'the operator session works under token A');
  t.equal((await call(gw.url, 'GET', '/console/v1/organizations', { headers: { cookie: opCookie } })).status, 200);
  await gw.stop();

  gw = await startGateway({ dataDir, env: { ADMIN_TOKEN: TOKEN_B } });
  const underB = await current(opCookie);
  t.equal(underB.status, 401, 'token B: the session from token A is refused');
  t.equal(underB.body?.error?.code, 'not_signed_in');
  t.equal((await call(gw.url, 'GET', '/console/v1/organizations', { headers: { cookie: opCookie } })).status, 401, 'on every console route');
  t.equal((await current(memberCookie)).status, 200, "a person's session is not the admin token's");
  t.equal((await signIn(gw.url, { admin_token: TOKEN_B }, '127.0.0.41')).status, 201, 'token B signs in');
  await gw.stop();

  gw = await startGateway({ dataDir, env: { ADMIN_TOKEN: '' } });
  t.equal((await current(opCookie)).status, 401, 'no admin token: no operator session is live');
  await gw.stop();
  gw = null;
});
