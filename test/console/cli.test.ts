// The `tollgate` command against PostgreSQL (DATABASE_URL): organizations,
// the key life cycle, its refusals and exit codes, and its edits reaching a
// running gateway within a second.
import t from 'tap';
import { startGateway, type Gateway } from '../helpers/gateway.js';
import { testDatabase } from '../helpers/services.js';
import { bearer, call, sleep, tollgate } from './keys-helpers.js';

let env: Record<string, string>;
let gw: Gateway;

t.before(async () => {
  const url = await testDatabase(t);
  if (url === null) return;
  env = { DATABASE_URL: url };
  gw = await startGateway({ env }); // migrates and seeds the catalog the scopes name
});
t.teardown(() => gw?.stop());

async function until(pred: () => Promise<boolean>, timeoutMs = 1000): Promise<number> {
  const start = performance.now();
  while (!(await pred())) {
    if (performance.now() - start > timeoutMs) return Infinity;
    await sleep(10);
  }
  return performance.now() - start;
}

t.test('help and wrong invocations', async (t) => {
  const help = await tollgate(['--help'], env);
  t.equal(help.code, 0);
  for (const c of ['orgs create', 'orgs show', 'keys create', 'keys list', 'keys edit', 'keys revoke']) t.match(help.stdout, c);
  t.equal((await tollgate([], env)).code, 2);
  const unknown = await tollgate(['keys', 'frobnicate'], env);
  t.equal(unknown.code, 2);
  t.match(unknown.stderr, /unknown command/);
  const missing = await tollgate(['orgs', 'create'], env);
  t.equal(missing.code, 2);
  t.match(missing.stderr, /--name is required/);
  const badFlag = await tollgate(['keys', 'edit', '00000000-0000-4000-8000-000000000000', '--version', '1', '--binding', 'x'], env);
  t.equal(badFlag.code, 2, 'there is no flag to edit a binding');
  t.match((await tollgate(['keys', 'create', '--help'], env)).stdout, /--idempotency-key/);
});

t.test('orgs create and show: money as decimal strings', async (t) => {
  const created = await tollgate(['orgs', 'create', '--name', 'Acme', '--balance', '12.5', '--json'], env);
  t.equal(created.code, 0, created.stderr);
  const org = JSON.parse(created.stdout);
  t.match(org, { object: 'organization', name: 'Acme', balance: '12.50', package: '0.00' });
  const shown = await tollgate(['orgs', 'show', org.id], env);
  t.equal(shown.code, 0);
  t.match(shown.stdout, /balance:\s+12\.50/);
  const bad = await tollgate(['orgs', 'create', '--name', 'X', '--balance=-3'], env);
  t.equal(bad.code, 1);
  t.match(bad.stderr, /balance: must be a non-negative decimal/);
  const none = await tollgate(['orgs', 'show', '00000000-0000-4000-8000-000000000000'], env);
  t.equal(none.code, 1);
  t.match(none.stderr, /No organization has this id/);
});

t.test('keys: create (secret once), list, show, edit (version), revoke, reaching the gateway', async (t) => {
  const org = JSON.parse((await tollgate(['orgs', 'create', '--name', 'Keys org', '--json'], env)).stdout);
  const created = await tollgate(['keys', 'create', org.id, '--name', 'deploy', '--modalities', 'text_generation', '--vendors', '10000000-0000-4000-8000-000000000001'], env);
  t.equal(created.code, 0, created.stderr);
  const secret = /tg_sk_[0-9A-Za-z]{43}/.exec(created.stdout)![0];
  t.match(created.stdout, /This secret will not be shown again/);
  t.equal(created.stdout.split(secret).length - 1, 1, 'the secret is printed exactly once');
  const keyId = /^Key ([0-9a-f-]{36})/.exec(created.stdout)![1];

  const usableMs = await until(async () => (await call(gw.url, 'GET', '/v1/key', bearer(secret))).status === 200);
  t.ok(usableMs < 1000, `the new key works on the gateway after ${usableMs.toFixed(0)} ms`);
  const echo = (await call(gw.url, 'GET', '/v1/key', bearer(secret))).json;
  t.same(echo.scope, { modality_codes: ['text_generation'], vendor_ids: ['10000000-0000-4000-8000-000000000001'] });

  const list = await tollgate(['keys', 'list', org.id], env);
  t.match(list.stdout, /ID\s+NAME\s+KEY\s+VERSION\s+STATUS/);
  t.match(list.stdout, new RegExp(`${keyId}\\s+deploy\\s+tg_sk_${secret.slice(6, 12)}…${secret.slice(-4)}\\s+1\\s+live`));
  t.notOk(list.stdout.includes(secret.slice(6)), 'no secret in the list');

  const edited = await tollgate(['keys', 'edit', keyId, '--version', '1', '--name', 'deploy-2', '--unrestricted', '--json'], env);
  t.equal(edited.code, 0, edited.stderr);
  t.match(JSON.parse(edited.stdout), { version: 2, name: 'deploy-2', scope: 'unrestricted' });
  const editMs = await until(async () => (await call(gw.url, 'GET', '/v1/key', bearer(secret))).json?.version === 2);
  t.ok(editMs < 1000, `the edit reached the gateway after ${editMs.toFixed(0)} ms`);

  const stale = await tollgate(['keys', 'edit', keyId, '--version', '1', '--name', 'lost'], env);
  t.equal(stale.code, 1);
  t.match(stale.stderr, /version_conflict/);
  const badScope = await tollgate(['keys', 'edit', keyId, '--version', '2', '--models', 'not-a-uuid'], env);
  t.equal(badScope.code, 1);
  t.equal(badScope.stderr, 'tollgate: scope.model_ids[0]: is not a catalog model name, alias or model_id. (invalid_request)\n', 'the entry by its index, the value not echoed, on one line');

  const revoked = await tollgate(['keys', 'revoke', keyId, '--json'], env);
  t.equal(revoked.code, 0);
  t.match(JSON.parse(revoked.stdout), { status: 'revoked', version: 3 });
  const revokeMs = await until(async () => (await call(gw.url, 'GET', '/v1/key', bearer(secret))).status === 401);
  t.ok(revokeMs < 1000, `the revocation reached the gateway after ${revokeMs.toFixed(0)} ms`);
  t.match((await tollgate(['keys', 'show', keyId], env)).stdout, /status:\s+revoked/);
});

t.test('keys create --idempotency-key: a repeat shows the first key, never its secret', async (t) => {
  const org = JSON.parse((await tollgate(['orgs', 'create', '--name', 'Idem org', '--json'], env)).stdout);
  const args = ['keys', 'create', org.id, '--name', 'ci', '--idempotency-key', 'pipeline-42', '--json'];
  const first = JSON.parse((await tollgate(args, env)).stdout);
  t.match(first.secret, /^tg_sk_/);
  const again = await tollgate(args, env);
  t.equal(again.code, 0);
  const repeat = JSON.parse(again.stdout);
  t.equal(repeat.id, first.id);
  t.notOk('secret' in repeat);
  const human = await tollgate(args.slice(0, -1), env);
  t.notOk(human.stdout.includes('tg_sk_' + first.secret.slice(6)), 'not in the human output either');
  t.match(human.stderr, /cannot be shown again/);
  const conflict = await tollgate(['keys', 'create', org.id, '--name', 'other', '--idempotency-key', 'pipeline-42'], env);
  t.equal(conflict.code, 1);
  t.match(conflict.stderr, /idempotency_conflict/);
});

t.test('orgs show --url: the amount held, the open reservations and the quotas, from the running gateway (issue 18 parity)', async (t) => {
  const admin = 'cli-admin-token-0123456789abcdef';
  const live = await startGateway({ env: { ...env, ADMIN_TOKEN: admin } });
  t.teardown(() => live.stop());
  const org = JSON.parse((await tollgate(['orgs', 'create', '--name', 'Held org', '--balance', '5', '--json'], env)).stdout);
  const key = JSON.parse((await tollgate(['keys', 'create', org.id, '--name', 'k', '--json'], env)).stdout);
  await until(async () => (await call(live.url, 'GET', '/v1/key', bearer(key.secret))).status === 200, 2000);
  // A slow stream holds its reservation while the command looks.
  const stream = fetch(`${live.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'nw-swift-1', stream: true, max_tokens: 100, messages: [{ role: 'user', content: '[sim:words=30] [sim:delay_ms=100] hi' }] }),
  }).then((r) => r.text());
  await sleep(500);
  const shown = await tollgate(['orgs', 'show', org.id, '--url', live.url], { ...env, ADMIN_TOKEN: admin });
  t.equal(shown.code, 0, shown.stderr);
  t.match(shown.stdout, /held:\s+\d+\.\d+ in 1 open reservations/);
  t.notMatch(shown.stdout, /held:\s+0\.00 /, 'a non-zero amount held');
  t.match(shown.stdout, /quotas:\s+\d+\/s \(default\), \d+\/min \(default\)/);
  await stream;
  const noToken = await tollgate(['orgs', 'show', org.id, '--url', live.url], env);
  t.equal(noToken.code, 2, 'without ADMIN_TOKEN: a usage error');
  t.match(noToken.stderr, /ADMIN_TOKEN/);
});

t.test('keys create/edit --quota-per-minute: the key\'s own quota, shown, validated and removed', async (t) => {
  const org = JSON.parse((await tollgate(['orgs', 'create', '--name', 'Quota', '--json'], env)).stdout);
  const created = await tollgate(['keys', 'create', org.id, '--name', 'limited', '--quota-per-minute', '3', '--json'], env);
  t.equal(created.code, 0, created.stderr);
  const key = JSON.parse(created.stdout);
  t.equal(key.quota_per_minute, 3);
  t.match((await tollgate(['keys', 'show', key.id], env)).stdout, /quota:\s+3\/min/);
  t.match((await tollgate(['keys', 'list', org.id], env)).stdout, /QUOTA[\s\S]*3\/min/);
  for (const bad of ['0', '1000001', 'lots', '2.5']) {
    const refused = await tollgate(['keys', 'create', org.id, '--name', 'x', '--quota-per-minute', bad], env);
    t.equal(refused.code, 1, `--quota-per-minute ${bad} is refused`);
    t.match(refused.stderr, /quota_per_minute: must be a whole number of calls from 1 to 1000000/);
  }
  const edited = await tollgate(['keys', 'edit', key.id, '--force', '--quota-per-minute', '10', '--json'], env);
  t.equal(JSON.parse(edited.stdout).quota_per_minute, 10);
  const both = await tollgate(['keys', 'edit', key.id, '--force', '--quota-per-minute', '10', '--no-quota'], env);
  t.equal(both.code, 2);
  const removed = await tollgate(['keys', 'edit', key.id, '--force', '--no-quota', '--json'], env);
  t.equal(removed.code, 0, removed.stderr);
  t.equal(JSON.parse(removed.stdout).quota_per_minute, null);
});
