// The operator's key routes under /console/v1 on a running gateway: admin
// token, creation (idempotent), listing with status, edits with version
// checks, binding immutability, revocation, validation in the REST envelope.
import t from 'tap';
import { startGateway, type Gateway } from '../helpers/gateway.js';
import { testDatabase } from '../helpers/services.js';
import { ADMIN, ADMIN_TOKEN, bearer, call, createKey, createOrg, sleep } from './keys-helpers.js';

let gw: Gateway;
let orgId: string;
let otherOrg: string;
const keysOf = (org: string) => `/console/v1/organizations/${org}/keys`;

t.before(async () => {
  const url = await testDatabase(t);
  if (url === null) return;
  gw = await startGateway({ env: { DATABASE_URL: url, ADMIN_TOKEN } });
  orgId = await createOrg(url, 'Console org');
  otherOrg = await createOrg(url, 'Other org');
});
t.teardown(() => gw?.stop());

t.test('the admin token guards every route (REST envelope 401)', async (t) => {
  const routes: Array<[string, string]> = [
    ['POST', keysOf(orgId)],
    ['GET', keysOf(orgId)],
    ['GET', '/console/v1/keys/00000000-0000-4000-8000-000000000000'],
    ['PATCH', '/console/v1/keys/00000000-0000-4000-8000-000000000000'],
    ['POST', '/console/v1/keys/00000000-0000-4000-8000-000000000000/revoke'],
  ];
  for (const [method, path] of routes) {
    const attempts: Array<Record<string, string>> = [{}, { authorization: 'Bearer wrong-token-0123456789' }, { authorization: ADMIN_TOKEN }];
    for (const headers of attempts) {
      const r = await call(gw.url, method, path, headers, method === 'GET' ? undefined : { name: 'x', version: 1 });
      t.equal(r.status, 401, `${method} ${path} ${JSON.stringify(headers)}`);
      t.equal(r.json.error.code, 'invalid_api_key');
      t.equal(r.json.error.request_id, r.headers['x-request-id']);
      t.type(r.json.error.version, 'string');
    }
  }
});

t.test('creation: 201 with the secret, once', async (t) => {
  const r = await call(gw.url, 'POST', keysOf(orgId), ADMIN, { name: 'first' });
  t.equal(r.status, 201);
  t.equal(r.headers['cache-control'], 'no-store');
  t.match(r.json, {
    object: 'api_key', organization_id: orgId, name: 'first', version: 1, status: 'live', scope: 'unrestricted',
    binding: 'organization', funding: 'balance', expires_at: null, revoked_at: null,
  });
  t.match(r.json.secret, /^tg_sk_[0-9A-Za-z]{43}$/);
  t.equal(r.json.prefix, r.json.secret.slice(6, 12));
  t.equal(r.json.last4, r.json.secret.slice(-4));
  const again = await call(gw.url, 'GET', `/console/v1/keys/${r.json.id}`, ADMIN);
  t.equal(again.status, 200);
  t.notOk('secret' in again.json, 'never readable again');
  t.notOk(again.text.includes(r.json.secret.slice(6)));
  const list = await call(gw.url, 'GET', keysOf(orgId), ADMIN);
  t.notOk(list.text.includes(r.json.secret.slice(6)), 'not in the list either');
});

t.test('Idempotency-Key: same body → 200 metadata without secret; different body → 409', async (t) => {
  const headers = { ...ADMIN, 'idempotency-key': 'create-ci-key-1' };
  const body = { name: 'ci', scope: { modality_codes: ['text_generation'] } };
  const first = await call(gw.url, 'POST', keysOf(orgId), headers, body);
  t.equal(first.status, 201);
  const repeat = await call(gw.url, 'POST', keysOf(orgId), headers, { scope: { modality_codes: ['text_generation'] }, name: 'ci' });
  t.equal(repeat.status, 200, 'a repeat is answered, not created again');
  t.equal(repeat.headers['idempotent-replayed'], 'true');
  t.equal(repeat.json.id, first.json.id);
  t.notOk('secret' in repeat.json, 'no secret on a repeat: a lost key is replaced, never recovered');
  const { secret: _s, ...metadata } = first.json;
  t.same(repeat.json, metadata);
  const conflict = await call(gw.url, 'POST', keysOf(orgId), headers, { name: 'ci', scope: { modality_codes: ['embeddings'] } });
  t.equal(conflict.status, 409);
  t.equal(conflict.json.error.code, 'idempotency_conflict');
  const elsewhere = await call(gw.url, 'POST', keysOf(otherOrg), headers, body);
  t.equal(elsewhere.status, 201, 'Idempotency-Keys are per organization');
  const plain1 = await call(gw.url, 'POST', keysOf(orgId), ADMIN, body);
  const plain2 = await call(gw.url, 'POST', keysOf(orgId), ADMIN, body);
  t.not(plain1.json.id, plain2.json.id, 'without the header every call creates a key');
  const concurrent = await Promise.all(
    Array.from({ length: 8 }, () => call(gw.url, 'POST', keysOf(orgId), { ...ADMIN, 'idempotency-key': 'race-1' }, { name: 'race' })),
  );
  t.same(concurrent.map((r) => r.status).sort(), [200, 200, 200, 200, 200, 200, 200, 201], 'concurrent repeats: one creation');
  t.equal(new Set(concurrent.map((r) => r.json.id)).size, 1);
});

t.test('list: every key of the organization with its status', async (t) => {
  const live = await createKey(gw, otherOrg, { name: 'live one' });
  const revoked = await createKey(gw, otherOrg, { name: 'revoked one' });
  const expiring = await createKey(gw, otherOrg, { name: 'expiring one', expires_at: new Date(Date.now() + 1200).toISOString() });
  await call(gw.url, 'POST', `/console/v1/keys/${revoked.id}/revoke`, ADMIN);
  await sleep(1300);
  const r = await call(gw.url, 'GET', keysOf(otherOrg), ADMIN);
  t.equal(r.status, 200);
  t.equal(r.json.object, 'list');
  const status = Object.fromEntries(r.json.data.map((k: any) => [k.id, k.status]));
  t.equal(status[live.id], 'live');
  t.equal(status[revoked.id], 'revoked');
  t.equal(status[expiring.id], 'expired');
  t.ok(r.json.data.every((k: any) => k.organization_id === otherOrg && !('secret' in k)));
});

t.test('edit: version check, new version, binding immutable', async (t) => {
  const { id, secret } = await createKey(gw, orgId, { name: 'to edit', binding: 'team-x' });
  const ok = await call(gw.url, 'PATCH', `/console/v1/keys/${id}`, ADMIN, { version: 1, name: 'edited', funding: 'package' });
  t.equal(ok.status, 200);
  t.match(ok.json, { version: 2, name: 'edited', funding: 'package', binding: 'team-x' });
  const stale = await call(gw.url, 'PATCH', `/console/v1/keys/${id}`, ADMIN, { version: 1, name: 'lost update' });
  t.equal(stale.status, 409);
  t.equal(stale.json.error.code, 'version_conflict');
  t.equal((await call(gw.url, 'GET', `/console/v1/keys/${id}`, ADMIN)).json.name, 'edited', 'the stale edit changed nothing');

  const bound = await call(gw.url, 'PATCH', `/console/v1/keys/${id}`, ADMIN, { version: 2, binding: 'team-y' });
  t.equal(bound.status, 422);
  t.equal(bound.json.error.code, 'immutable_field');
  t.same(bound.json.error.field_details, [{ field: 'binding', issue: 'is fixed when the key is created and cannot be edited' }]);
  t.equal((await call(gw.url, 'GET', `/console/v1/keys/${id}`, ADMIN)).json.version, 2, 'a refused edit is no edit');

  const scoped = await call(gw.url, 'PATCH', `/console/v1/keys/${id}`, ADMIN, { version: 2, scope: { vendor_ids: ['10000000-0000-4000-8000-000000000002'] } });
  t.equal(scoped.status, 200);
  t.same(scoped.json.scope, { vendor_ids: ['10000000-0000-4000-8000-000000000002'] });
  const cleared = await call(gw.url, 'PATCH', `/console/v1/keys/${id}`, ADMIN, { version: 3, scope: 'unrestricted' });
  t.equal(cleared.json.scope, 'unrestricted');
  // The edit reaches the gateway's key check.
  for (let i = 0; i < 100; i++) {
    const echo = await call(gw.url, 'GET', '/v1/key', bearer(secret));
    if (echo.json?.version === 4) break;
    await sleep(10);
  }
  t.equal((await call(gw.url, 'GET', '/v1/key', bearer(secret))).json.name, 'edited');
});

t.test('revocation: 200 revoked, once; a revoked key cannot be edited', async (t) => {
  const { id } = await createKey(gw, orgId, { name: 'to revoke' });
  const r = await call(gw.url, 'POST', `/console/v1/keys/${id}/revoke`, ADMIN);
  t.equal(r.status, 200);
  t.match(r.json, { status: 'revoked', version: 2 });
  t.type(r.json.revoked_at, 'string');
  const again = await call(gw.url, 'POST', `/console/v1/keys/${id}/revoke`, ADMIN);
  t.equal(again.status, 200);
  t.equal(again.json.version, 2, 'revoking again changes nothing');
  t.equal(again.json.revoked_at, r.json.revoked_at);
  const edit = await call(gw.url, 'PATCH', `/console/v1/keys/${id}`, ADMIN, { version: 2, name: 'zombie' });
  t.equal(edit.status, 409);
  t.equal(edit.json.error.code, 'key_revoked');
});

t.test('validation and not-found answers in the REST envelope', async (t) => {
  const bad = await call(gw.url, 'POST', keysOf(orgId), ADMIN, { name: '', scope: { model_ids: ['20000000-0000-4000-8000-0000000000ff'] }, colour: 'red' });
  t.equal(bad.status, 400);
  t.equal(bad.json.error.code, 'invalid_request');
  t.same(bad.json.error.field_details.map((d: any) => d.field).sort(), ['colour', 'name']);
  const unknownModel = await call(gw.url, 'POST', keysOf(orgId), ADMIN, { name: 'x', scope: { model_ids: ['20000000-0000-4000-8000-0000000000ff'] } });
  t.equal(unknownModel.status, 400);
  t.same(unknownModel.json.error.field_details, [{ field: 'scope.model_ids[0]', issue: 'no catalog model has this model_id' }]);
  const emptyAxis = await call(gw.url, 'POST', keysOf(orgId), ADMIN, { name: 'x', scope: { vendor_ids: [] } });
  t.equal(emptyAxis.json.error.field_details[0].field, 'scope.vendor_ids');
  t.equal((await call(gw.url, 'POST', keysOf(orgId), ADMIN, '{"name":')).json.error.code, 'invalid_json');
  t.equal((await call(gw.url, 'POST', keysOf(orgId), { ...ADMIN, 'idempotency-key': 'x'.repeat(300) }, { name: 'x' })).status, 400);

  const noOrg = await call(gw.url, 'POST', keysOf('00000000-0000-4000-8000-000000000000'), ADMIN, { name: 'x' });
  t.equal(noOrg.status, 404);
  t.equal(noOrg.json.error.code, 'organization_not_found');
  t.equal((await call(gw.url, 'GET', keysOf('not-a-uuid'), ADMIN)).json.error.code, 'organization_not_found');
  for (const path of ['/console/v1/keys/00000000-0000-4000-8000-000000000000', '/console/v1/keys/nope']) {
    const r = await call(gw.url, 'GET', path, ADMIN);
    t.equal(r.status, 404);
    t.equal(r.json.error.code, 'key_not_found');
  }
  const noKeyEdit = await call(gw.url, 'PATCH', '/console/v1/keys/00000000-0000-4000-8000-000000000000', ADMIN, { version: 1, name: 'x' });
  t.equal(noKeyEdit.json.error.code, 'key_not_found');
  t.equal((await call(gw.url, 'POST', '/console/v1/keys/00000000-0000-4000-8000-000000000000/revoke', ADMIN)).status, 404);
  t.equal((await call(gw.url, 'DELETE', '/console/v1/keys/00000000-0000-4000-8000-000000000000', ADMIN)).status, 405);
});
