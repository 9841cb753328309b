// The organization console routes on a real gateway (two workers, embedded
// store): create, read live money, edit quotas, credit (at once, through the
// actor; idempotent), usage; and `tollgate credit` against the running
// gateway, which its ledger takes in within a second.
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import t from 'tap';
import { request } from 'undici';
import { runCli } from '../../src/console/cli/main.js';
import { runningEmbeddedStore } from '../../src/store/embedded.js';
import { createPool } from '../../src/store/pool.js';
import { startGateway, tempDir, type Gateway } from '../helpers/gateway.js';

const TOKEN = 'admin-token-0123456789';
const dataDir = tempDir();
let gw: Gateway;

t.before(async () => {
  gw = await startGateway({ env: { ADMIN_TOKEN: TOKEN }, workers: 2, dataDir });
});
t.teardown(async () => {
  await gw.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

async function call(method: 'GET' | 'POST' | 'PATCH', path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await request(gw.url + path, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.statusCode, headers: res.headers, json: (await res.body.json()) as any };
}

/** Usage rows written straight into the gateway's store; `values` are rows over the columns below, $1 being the organization. */
async function insertUsage(org: string, values: string): Promise<void> {
  const pool = createPool(runningEmbeddedStore(dataDir)!.url, 1);
  try {
    await pool.query(
      `INSERT INTO usage_records (request_id, org_id, key_id, model_id, supplier, surface, funding, input_tokens, cached_input_tokens, output_tokens,
         image_units, reserved_micros, charged_micros, outcome, metered_source, hold_expired, ttfb_ms, total_ms, finished_at)
       VALUES ${values}`,
      [org],
    );
  } finally {
    await pool.end();
  }
}

let orgId = '';

t.test('create and read an organization', async (t) => {
  const created = await call('POST', '/console/v1/organizations', { name: 'Acme', balance: '10.00' });
  t.equal(created.status, 201);
  orgId = created.json.id;
  t.match(created.json, {
    object: 'organization',
    name: 'Acme',
    balance: '10.00',
    held: '0.00',
    available: '10.00',
    package: '0.00',
    package_expires_at: null,
    open_holds: 0,
    quotas: { per_second: 100, per_minute: 3000, per_second_source: 'default', per_minute_source: 'default' },
  });
  t.same((await call('GET', `/console/v1/organizations/${orgId}`)).json, created.json);
  t.equal((await call('GET', `/console/v1/organizations/${randomUUID()}`)).json.error.code, 'organization_not_found');
  t.equal((await call('GET', '/console/v1/organizations/not-a-uuid')).status, 404);
  const bad = await request(`${gw.url}/console/v1/organizations/${orgId}`, { headers: { authorization: 'Bearer wrong-token-000000' } });
  t.equal(bad.statusCode, 401);
  await bad.body.dump();
});

t.test('quotas: set per organization, back to the default with null', async (t) => {
  const set = await call('PATCH', `/console/v1/organizations/${orgId}`, { quota_per_second: 3, quota_per_minute: 50 });
  t.equal(set.status, 200);
  t.match(set.json.quotas, { per_second: 3, per_minute: 50, per_second_source: 'organization' });
  const back = await call('PATCH', `/console/v1/organizations/${orgId}`, { quota_per_second: null });
  t.match(back.json.quotas, { per_second: 100, per_minute: 50, per_second_source: 'default', per_minute_source: 'organization' });
  const wrong = await call('PATCH', `/console/v1/organizations/${orgId}`, { quota_per_second: 0, balance: '5' });
  t.equal(wrong.status, 400);
  t.same(wrong.json.error.field_details.map((d: any) => d.field).sort(), ['balance', 'quota_per_second']);
});

t.test('credits reach the running actor at once and are idempotent by Idempotency-Key', async (t) => {
  const first = await call('POST', `/console/v1/organizations/${orgId}/credits`, { amount: '2.50', target: 'balance' }, { 'idempotency-key': 'topup-1' });
  t.equal(first.status, 201);
  t.match(first.json, { object: 'credit', amount: '2.50', target: 'balance', organization: { balance: '12.50', available: '12.50' } });
  const replay = await call('POST', `/console/v1/organizations/${orgId}/credits`, { amount: '2.50', target: 'balance' }, { 'idempotency-key': 'topup-1' });
  t.equal(replay.status, 200);
  t.equal(replay.headers['idempotent-replayed'], 'true');
  t.equal(replay.json.id, first.json.id);
  t.equal(replay.json.organization.balance, '12.50', 'credited once');
  const conflict = await call('POST', `/console/v1/organizations/${orgId}/credits`, { amount: '3.00' }, { 'idempotency-key': 'topup-1' });
  t.equal(conflict.status, 409);
  t.equal(conflict.json.error.code, 'idempotency_conflict');
  const expires = new Date(Date.now() + 30 * 86_400_000).toISOString();
  const pkg = await call('POST', `/console/v1/organizations/${orgId}/credits`, { amount: '5', target: 'package', expires_at: expires });
  t.equal(pkg.status, 201);
  t.match(pkg.json.organization, { package: '5.00', package_available: '5.00', package_expires_at: expires, package_expired: false, balance: '12.50' });
  const invalid = await call('POST', `/console/v1/organizations/${orgId}/credits`, { amount: '0', target: 'balance', expires_at: expires });
  t.equal(invalid.status, 400);
  t.same(invalid.json.error.field_details.map((d: any) => d.field).sort(), ['amount', 'expires_at']);
  const missing = await call('POST', `/console/v1/organizations/${randomUUID()}/credits`, { amount: '1' });
  t.equal(missing.status, 404);
});

t.test('`tollgate credit` on the running gateway: its ledger takes the credit in within a second', async (t) => {
  const out: string[] = [];
  const err: string[] = [];
  const io = { out: (s: string) => void out.push(s), err: (s: string) => void err.push(s) };
  const env = { DATA_DIR: dataDir, LOG_LEVEL: 'silent' };
  const code = await runCli(['credit', orgId, '--amount', '1.25', '--note', 'from the shell', '--idempotency-key', 'cli-1'], io, env);
  t.equal(code, 0, err.join(''));
  t.match(out.join(''), /Credited 1\.25 to the balance/);
  t.equal(await runCli(['credit', orgId, '--amount', '1.25', '--idempotency-key', 'cli-1'], io, env), 0);
  t.match(out.join(''), /Already credited/);
  t.equal(await runCli(['credit', orgId, '--amount', 'abc'], io, env), 1, 'refused like the API');
  const started = Date.now();
  let balance = '';
  while (Date.now() - started < 3000) {
    balance = (await call('GET', `/console/v1/organizations/${orgId}`)).json.balance;
    if (balance === '13.75') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  t.equal(balance, '13.75', `the running actor has the shell's credit after ${Date.now() - started} ms`);
});

t.test('usage: the newest rows and the totals', async (t) => {
  await insertUsage(
    orgId,
    `('req_u1', $1, 'k', 'm', 'alpha', 'chat_completions', 'balance', 10, 2, 5, 0, 1000, 120, 'completed', 'supplier', false, 40, 90, now() - interval '1 minute'),
     ('req_u2', $1, 'k', 'm', NULL, 'responses', 'balance', 0, 0, 0, 0, 1000, 0, 'failed', NULL, false, NULL, 15, now())`,
  );
  const usage = await call('GET', `/console/v1/organizations/${orgId}/usage`);
  t.equal(usage.status, 200);
  t.match(usage.json, { object: 'list', has_more: false, total_requests: 2, total_charged: '0.00012' });
  t.same(
    usage.json.data.map((r: any) => [r.request_id, r.outcome, r.charged, r.reserved]),
    [
      ['req_u2', 'failed', '0.00', '0.001'],
      ['req_u1', 'completed', '0.00012', '0.001'],
    ],
  );
  t.notOk(JSON.stringify(usage.json).includes('prompt'), 'no content in usage rows');
});

t.test('usage per day: the total is summed in exact micros, not as floats', async (t) => {
  const created = await call('POST', '/console/v1/organizations', { name: 'Daily Totals' });
  t.equal(created.status, 201);
  // Two days' charges whose sum, 2^53 − 1 micros, has more digits than a double carries when added as decimals.
  await insertUsage(
    created.json.id,
    `('req_d1', $1, 'k', 'm', 'alpha', 'chat_completions', 'balance', 1, 0, 1, 0, 4503599627370495, 4503599627370495, 'completed', 'supplier', false, 1, 2, now() - interval '1 day'),
     ('req_d2', $1, 'k', 'm', 'alpha', 'chat_completions', 'balance', 1, 0, 1, 0, 4503599627370496, 4503599627370496, 'completed', 'supplier', false, 1, 2, now())`,
  );
  const daily = await call('GET', `/console/v1/organizations/${created.json.id}/usage/daily?days=3`);
  t.equal(daily.status, 200);
  t.same(daily.json.data.map((d: any) => d.charged), ['0.00', '4503599627.370495', '4503599627.370496']);
  t.equal(daily.json.total_charged, '9007199254.740991', 'the exact sum, formatted by the one money formatter');
  t.not(String(daily.json.data.reduce((s: number, d: any) => s + Number(d.charged), 0)), '9007199254.740991', 'adding the decimals as numbers would not give it');
});
