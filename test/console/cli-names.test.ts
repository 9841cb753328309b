// People name models by name (issue 34 items 3, 7, 12): key scopes take model
// names and aliases and vendor codes, in the console API and the `tollgate`
// command; `keys edit` offers the current version or edits it with --force;
// `catalog show` prints each model's price in the account currency. A field
// refusal's message names the member and the rule (items 2, 12), and never
// echoes a secret the caller sent.
import t from 'tap';
import { startGateway, type Gateway } from '../helpers/gateway.js';
import { testDatabase } from '../helpers/services.js';
import { ADMIN, bearer, call, createKey, createOrg, tollgate } from './keys-helpers.js';

const ATLAS = '20000000-0000-4000-8000-000000000002';
const QUILL = '20000000-0000-4000-8000-000000000003';
const AURORA = '10000000-0000-4000-8000-000000000002';

let env: Record<string, string>;
let gw: Gateway;

t.before(async () => {
  const url = await testDatabase(t);
  if (url === null) return;
  env = { DATABASE_URL: url };
  gw = await startGateway({ env: { ...env, ADMIN_TOKEN: ADMIN.authorization.slice(7) } }); // migrates and seeds the catalog
});
t.teardown(() => gw?.stop());

t.test('issue 34 item 7: scopes name models by canonical name or alias, vendors by code', async (t) => {
  const orgId = await createOrg(env.DATABASE_URL);
  const created = await tollgate(['keys', 'create', orgId, '--name', 'by name', '--models', 'au-atlas-2,quill', '--vendors', 'aurora', '--json'], env);
  t.equal(created.code, 0, created.stderr);
  const key = JSON.parse(created.stdout);
  t.same(key.scope, { model_ids: [ATLAS, QUILL], vendor_ids: [AURORA] }, 'stored as the catalog UUIDs');

  const viaApi = await createKey(gw, orgId, { name: 'api by alias', scope: { model_ids: ['atlas'] } });
  t.same(viaApi.json.scope, { model_ids: [ATLAS] }, 'the console API takes an alias too');
  const chat = (model: string) =>
    call(gw.url, 'POST', '/v1/chat/completions', { ...bearer(viaApi.secret), 'content-type': 'application/json' }, { model, max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] });
  t.equal((await chat('atlas')).status, 200, 'the named model is allowed');
  t.equal((await chat('nw-swift-1')).status, 403, 'another model is refused');

  const unknown = await call(gw.url, 'POST', `/console/v1/organizations/${orgId}/keys`, { ...ADMIN, 'content-type': 'application/json' }, { name: 'x', scope: { model_ids: ['atlas', 'no-such-model'] } });
  t.equal(unknown.status, 400);
  t.match(unknown.json.error.field_details, [{ field: 'scope.model_ids[1]', issue: 'is not a catalog model name, alias or model_id' }], 'the unknown entry is named by its index');
  t.equal(unknown.json.error.message, 'scope.model_ids[1]: is not a catalog model name, alias or model_id.', 'and so is it in the message');
});

t.test('issue 34 item 12: keys edit offers the current version, and --force edits whatever version it is', async (t) => {
  const orgId = await createOrg(env.DATABASE_URL);
  const key = await createKey(gw, orgId, { name: 'edit me' });
  const missing = await tollgate(['keys', 'edit', key.id, '--name', 'renamed'], env);
  t.equal(missing.code, 2);
  t.match(missing.stderr, /the key is at version 1 now \(--version 1\), or --force/);
  const forced = await tollgate(['keys', 'edit', key.id, '--force', '--name', 'renamed', '--json'], env);
  t.equal(forced.code, 0, forced.stderr);
  t.match(JSON.parse(forced.stdout), { name: 'renamed', version: 2 });
  const both = await tollgate(['keys', 'edit', key.id, '--force', '--version', '2', '--name', 'x'], env);
  t.equal(both.code, 2, '--force and --version exclude each other');
});

t.test('issue 34 item 3: catalog show prints prices in the account currency', async (t) => {
  const shown = await tollgate(['catalog', 'show'], { ...env, CURRENCY: 'EUR' });
  t.equal(shown.code, 0, shown.stderr);
  t.match(shown.stdout, /Models \(prices in EUR: per 1M tokens, or per image\)/);
  t.match(shown.stdout, /nw-swift-1\s+swift,swift-latest\s+0\.15\s+0\.075\s+0\.60\s+-\s+true/);
  t.match(shown.stdout, /au-canvas-1\s+canvas\s+-\s+-\s+-\s+0\.04\s+true/);
});

t.test('issue 34 items 7, 12: usage filters by a model alias and prints names; orgs list shows balances', async (t) => {
  const orgId = await createOrg(env.DATABASE_URL, 'Usage by name', '7.25');
  const key = await createKey(gw, orgId, { name: 'usage key' });
  const chat = await call(gw.url, 'POST', '/v1/chat/completions', { ...bearer(key.secret), 'content-type': 'application/json' }, { model: 'atlas', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] });
  t.equal(chat.status, 200);
  let rows: any[] = [];
  for (let i = 0; i < 50 && rows.length === 0; i++) {
    rows = (await call(gw.url, 'GET', `/console/v1/organizations/${orgId}/usage?model=atlas`, ADMIN)).json.data;
    if (rows.length === 0) await new Promise((r) => setTimeout(r, 100));
  }
  t.equal(rows.length, 1, 'the alias finds the call (it showed 0 requests)');
  t.equal((await call(gw.url, 'GET', `/console/v1/organizations/${orgId}/usage?model=au-atlas-2`, ADMIN)).json.total_requests, 1, 'so does the canonical name');
  t.equal((await call(gw.url, 'GET', `/console/v1/organizations/${orgId}/usage?model=${ATLAS}`, ADMIN)).json.total_requests, 1, 'and the model_id');
  t.equal((await call(gw.url, 'GET', `/console/v1/organizations/${orgId}/usage?model=swift`, ADMIN)).json.total_requests, 0, 'another model: none');
  const daily = (await call(gw.url, 'GET', `/console/v1/organizations/${orgId}/usage/daily?days=1&model=atlas`, ADMIN)).json;
  t.equal(daily.data[0].requests, 1, 'the daily view filters by alias too');

  const usage = await tollgate(['usage', orgId, '--model', 'atlas'], env);
  t.equal(usage.code, 0, usage.stderr);
  t.match(usage.stdout, /\bau-atlas-2\b/, 'the model by name');
  t.notMatch(usage.stdout, new RegExp(ATLAS), 'not by UUID');

  const orgs = await tollgate(['orgs', 'list', '--search', 'Usage by name'], { ...env, CURRENCY: 'EUR' });
  t.equal(orgs.code, 0, orgs.stderr);
  t.match(orgs.stdout, /BALANCE \(EUR\)/);
  t.match(orgs.stdout, /Usage by name\s+7\.2\d/, 'the balance column');
});

t.test('issue 34 items 2, 12: a field refusal states the member and the rule first, in the CLI and the console API', async (t) => {
  const orgId = await createOrg(env.DATABASE_URL);
  const short = await tollgate(['accounts', 'create', orgId, '--email', 'new@example.com', '--name', 'New person'], { ...env, TOLLGATE_PASSWORD: 'short' });
  t.equal(short.code, 1);
  t.equal(short.stderr, 'tollgate: password: must be 10 to 256 characters. (invalid_request)\n', 'one line: the member and the rule, no generic sentence');

  const accounts = `/console/v1/organizations/${orgId}/accounts`;
  const api = await call(gw.url, 'POST', accounts, ADMIN, { email: 'new@example.com', name: 'New person', password: 'short' });
  t.equal(api.status, 400);
  t.equal(api.json.error.code, 'invalid_request');
  t.equal(api.json.error.message, 'password: must be 10 to 256 characters.');
  t.same(api.json.error.field_details, [{ field: 'password', issue: 'must be 10 to 256 characters' }]);

  const several = await call(gw.url, 'POST', accounts, ADMIN, { email: 'nobody', name: 'New person', password: 'short', role: 'admin' });
  t.equal(several.status, 400);
  t.equal(several.json.error.message, 'role: unknown member; email: must be an email address of at most 254 characters; password: must be 10 to 256 characters.', 'every rule broken, in one sentence');

  const key = await createKey(gw, orgId, { name: 'edit me' });
  const quota = await tollgate(['keys', 'edit', key.id, '--force', '--quota-per-minute', '0'], env);
  t.equal(quota.code, 1);
  t.match(quota.stderr, /^tollgate: quota_per_minute: must be a whole number of calls from 1 to \d+, or null for no quota\. \(invalid_request\)\n$/, 'a key edit: the limit named, on one line');
});

t.test('issue 34 item 2: a console refusal never echoes a secret the caller sent', async (t) => {
  const orgId = await createOrg(env.DATABASE_URL);
  const { id, secret } = await createKey(gw, orgId, { name: 'holder' });
  const password = 'Correct-horse-7!';
  const refusals = [
    // A key pasted where a model name goes, by the console API and by the CLI.
    await call(gw.url, 'POST', `/console/v1/organizations/${orgId}/keys`, ADMIN, { name: 'scoped', scope: { model_ids: ['atlas', secret] } }),
    await call(gw.url, 'PATCH', `/console/v1/keys/${id}`, ADMIN, { version: 1, scope: { model_ids: [secret] }, quota_per_minute: secret }),
    // A password where the email goes, and a key as a password of the wrong length.
    await call(gw.url, 'POST', `/console/v1/organizations/${orgId}/accounts`, ADMIN, { email: password, name: 'Someone', password: secret.repeat(6) }),
  ];
  for (const r of refusals) {
    t.equal(r.status, 400, r.json?.error?.message);
    t.match(r.json.error.message, /^[\w.[\]()]+: /, `the message names a member: ${r.json.error.message}`);
    t.notOk(r.text.includes(secret.slice(6, 20)) || r.text.includes(password), `no secret in ${r.text}`);
  }
  const viaCli = await tollgate(['keys', 'edit', id, '--force', '--models', `atlas,${secret}`], env);
  t.equal(viaCli.code, 1);
  t.match(viaCli.stderr, /scope\.model_ids\[1\]: is not a catalog model name, alias or model_id/);
  t.notOk(viaCli.stderr.includes(secret.slice(6, 20)), 'nor in what the CLI prints');
});
