// Billing seen from the chat surface over HTTP: admission and reservation
// refusals in the openai SDK's own error classes, and the K-of-50
// concurrency guarantee through real requests.
import OpenAI from 'openai';
import t from 'tap';
import { boundCost } from '../../src/billing/pricing.js';
import { formatMoney } from '../../src/money/money.js';
import { micros } from '../helpers/money.js';
import { DEFAULT_CEILING } from '../../src/surfaces/chat/codec.js';
import { startGateway } from '../helpers/gateway.js';
import { ADMIN_TOKEN, console_, organization, provision, usageRows } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';
import { secondBegun } from '../helpers/clock.js';

/** The demo catalog's price of nw-swift-1 (config/catalog.seed.json). */
const SWIFT = { inputPerMtok: 150000, cachedInputPerMtok: 75000, outputPerMtok: 600000, imageUnit: 0 };

const db = await testDatabase(t);
if (db !== null) {
  const gw = await startGateway({ env: { DATABASE_URL: db, ADMIN_TOKEN }, workers: 2 });
  t.teardown(() => gw.stop());
  const sdk = (key: string) => new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  const ask = { model: 'nw-swift-1', messages: [{ role: 'user' as const, content: 'hi [sim:words=2]' }] };

  t.test('403 PermissionDeniedError: a model outside the key scope, refused before any charge', async (t) => {
    const atlas = '20000000-0000-4000-8000-000000000002';
    const { key, orgId } = await provision(gw.url, { scope: { model_ids: [atlas] } });
    const err = await sdk(key).chat.completions.create(ask).catch((e) => e);
    t.ok(err instanceof OpenAI.PermissionDeniedError, 'PermissionDeniedError');
    t.equal(err.status, 403);
    t.equal(err.type, 'permission_error');
    const ok = await sdk(key).chat.completions.create({ ...ask, model: 'atlas' });
    t.equal(ok.model, 'atlas', 'the alias of a model inside the scope is served');
    t.equal((await usageRows(gw.url, orgId)).length, 1, 'only the served call left a usage row');
  });

  t.test('402: an organization that cannot hold the bound', async (t) => {
    const { key } = await provision(gw.url, { balance: '0.01' });
    const err = await sdk(key).chat.completions.create(ask).catch((e) => e);
    t.ok(err instanceof OpenAI.APIError, 'APIError');
    t.equal(err.status, 402);
    t.equal(err.code, 'insufficient_funds');
  });

  t.test('429 RateLimitError with Retry-After at the per-second quota', async (t) => {
    const { key, orgId } = await provision(gw.url);
    await console_(gw.url, 'PATCH', `/organizations/${orgId}`, { quota_per_second: 2 });
    const client = sdk(key);
    // The quota counts wall-clock seconds: sent as one begins, the five land in it (a second turning mid-burst would
    // rightly admit up to two more: CI saw 3 admitted once, 2026-11-29).
    await secondBegun();
    const results = await Promise.all(Array.from({ length: 5 }, () => client.chat.completions.create(ask).then(() => 200, (e) => e)));
    const limited = results.filter((r) => r instanceof OpenAI.RateLimitError);
    t.ok(limited.length >= 3, `${limited.length} of 5 refused within one second`);
    t.equal((limited[0] as any).status, 429);
    t.match((limited[0] as any).headers.get('retry-after'), /^\d+$/);
  });

  t.test('funded for exactly K maximum-bound calls, 50 at once: exactly K admitted, money adds up', async (t) => {
    const K = 6;
    const body = JSON.stringify({ model: 'nw-swift-1', messages: [{ role: 'user', content: 'slow [sim:words=3] [sim:delay_ms=400]' }] });
    const bound = boundCost(SWIFT, { inputTokens: Buffer.byteLength(body), outputTokens: DEFAULT_CEILING, imageUnits: 0 });
    // One micro short of a (K+1)th hold, even of its counted estimate (docs/billing.md): less than its output bound alone.
    const credits = K * bound + boundCost(SWIFT, { inputTokens: 0, outputTokens: DEFAULT_CEILING, imageUnits: 0 }) - 1;
    const { key, orgId } = await provision(gw.url, { balance: formatMoney(credits) });
    await new Promise((r) => setTimeout(r, 200)); // the key reaches the second worker
    const statuses = await Promise.all(
      Array.from({ length: 50 }, () =>
        fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body }).then(
          async (r) => {
            await r.arrayBuffer();
            return r.status;
          },
        ),
      ),
    );
    t.equal(statuses.filter((s) => s === 200).length, K, `exactly ${K} admitted`);
    t.equal(statuses.filter((s) => s === 402).length, 50 - K, 'the rest refused with 402');
    let rows: any[] = [];
    for (let i = 0; i < 30 && rows.length < K; i++) {
      rows = await usageRows(gw.url, orgId);
      await new Promise((r) => setTimeout(r, 100));
    }
    t.equal(rows.length, K);
    const charged = rows.reduce((sum, r) => sum + micros(r.charged), 0);
    const org = await organization(gw.url, orgId);
    t.equal(micros(org.balance), credits - charged, 'balance = credits − sum of charged usage rows, to the micro');
    t.equal(org.held, '0.00', 'no hold left');
    t.ok(micros(org.balance) >= 0, `balance not negative: ${org.balance}`);
  });
}
