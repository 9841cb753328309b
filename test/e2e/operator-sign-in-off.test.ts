// A gateway started without ADMIN_TOKEN says so when someone tries to sign in
// as the operator, rather than "The email or password is wrong" (issue 34
// item 6); an account's sign-in answers as before.
import t from 'tap';
import { startGateway, type Gateway } from '../helpers/gateway.js';

let gw: Gateway;
t.before(async () => {
  gw = await startGateway({ env: { ADMIN_TOKEN: '' } });
});
t.teardown(() => gw?.stop());

const signIn = (body: unknown) =>
  fetch(`${gw.url}/console/v1/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

t.test('issue 34 item 6: operator sign-in without ADMIN_TOKEN names the setting', async (t) => {
  const r = await signIn({ admin_token: 'a-token-of-sixteen-characters' });
  t.equal(r.status, 403);
  const body = (await r.json()) as any;
  t.equal(body.error.code, 'operator_sign_in_off');
  t.match(body.error.message, /started without ADMIN_TOKEN/);
  const account = await signIn({ email: 'nobody@example.com', password: 'not-the-password' });
  t.equal(account.status, 401, 'a person signing in gets the usual answer');
  t.equal(((await account.json()) as any).error.code, 'sign_in_refused');
});
