// A key's own request quota over real HTTP with two workers (issue 35): exact
// across both, because every call of a key with a quota is admitted by its
// organization's ledger actor (src/ledger/key-quotas.ts), never from a
// worker's allotment; another key of the organization is not limited by it,
// and a key without a quota keeps being reserved from allotments.
import t from 'tap';
import { startGateway } from '../helpers/gateway.js';
import { ADMIN_TOKEN, console_, provision } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';

const db = await testDatabase(t);
if (db !== null) {
  const gw = await startGateway({ env: { DATABASE_URL: db, ADMIN_TOKEN }, workers: 2 });
  t.teardown(() => gw.stop());

  const chat = async (key: string, words = 2): Promise<{ status: number; retryAfter: string | null; body: any }> => {
    const r = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'nw-swift-1', messages: [{ role: 'user', content: `hi [sim:words=${words}] [sim:delay_ms=200]` }] }),
    });
    return { status: r.status, retryAfter: r.headers.get('retry-after'), body: await r.json() };
  };
  /** Calls settled in their worker from its allotments, summed over the workers (/metrics). */
  const settledInWorkers = async (): Promise<number> => {
    const text = await (await fetch(`${gw.opsUrl}/metrics`)).text();
    let n = 0;
    for (const m of text.matchAll(/^tollgate_ledger_worker_settlements_total(?:\{[^}]*\})? (\d+)/gm)) n += Number(m[1]);
    return n;
  };
  const newKey = (orgId: string, body: Record<string, unknown>) => console_(gw.url, 'POST', `/organizations/${orgId}/keys`, body);

  t.test('quota_per_minute 3: exactly 3 of 16 concurrent calls over two workers, the rest 429 naming the key\'s quota', async (t) => {
    const { orgId, key: other } = await provision(gw.url);
    // Room in the organization's minute for the key's 3 and exactly 8 more: were the key's 13 refusals counted there, the other key would be refused.
    await console_(gw.url, 'PATCH', `/organizations/${orgId}`, { quota_per_minute: 11 });
    const limited = await newKey(orgId, { name: 'limited', quota_per_minute: 3 });
    t.equal(limited.quota_per_minute, 3, 'the console answers the quota');
    const results = await Promise.all(Array.from({ length: 16 }, () => chat(limited.secret)));
    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 429);
    t.equal(ok.length, 3, 'exactly 3 admitted');
    t.equal(refused.length, 13, 'the other 13 refused');
    for (const r of refused) {
      t.equal(r.body.error.code, 'rate_limited');
      t.match(r.body.error.message, /^This API key's own quota of 3 requests per minute is used up \(a limit set on the key, not the organization's quota\); retry after \d+ seconds?\.$/);
      const after = Number(r.retryAfter);
      t.ok(after >= 1 && after <= 60, `Retry-After ${r.retryAfter}`);
    }
    // The organization's other key is not limited by it, and the refused calls did not count against the organization.
    const others = await Promise.all(Array.from({ length: 8 }, () => chat(other)));
    t.same(others.map((r) => r.status), Array(8).fill(200), 'another key of the organization is served: the key\'s refusals took none of the organization\'s 11');
    const twelfth = await chat(other);
    t.equal(twelfth.status, 429, 'the organization\'s 12th call is refused by its own quota');
    t.notMatch(twelfth.body.error.message, /key's own quota/);
    t.equal((await chat(limited.secret)).status, 429, 'the limited key is still refused');
    // With its quota removed (every worker hears of the edit within a second), the key is refused by the organization's quota only.
    const edited = await console_(gw.url, 'PATCH', `/keys/${limited.id}`, { version: limited.version, quota_per_minute: null });
    t.equal(edited.quota_per_minute, null);
    let last = await chat(limited.secret);
    for (let i = 0; i < 30 && /key's own quota/.test(last.body.error?.message ?? ''); i++) {
      await new Promise((r) => setTimeout(r, 100));
      last = await chat(limited.secret);
    }
    t.equal(last.status, 429);
    t.notMatch(last.body.error.message, /key's own quota/, 'with its quota removed the key meets the organization\'s quota only');
  });

  t.test('the organization\'s quota still binds a key with a quota of its own', async (t) => {
    const { orgId } = await provision(gw.url);
    await console_(gw.url, 'PATCH', `/organizations/${orgId}`, { quota_per_minute: 2 });
    const limited = await newKey(orgId, { name: 'limited', quota_per_minute: 3 });
    const results = await Promise.all(Array.from({ length: 6 }, () => chat(limited.secret)));
    t.equal(results.filter((r) => r.status === 200).length, 2, 'the organization\'s quota of 2 binds first');
    const orgRefusals = results.filter((r) => r.status === 429);
    t.equal(orgRefusals.length, 4);
    t.ok(orgRefusals.every((r) => !/key's own quota/.test(r.body.error.message)), 'refused by the organization\'s quota, not the key\'s');
  });

  t.test('a key without a quota is still reserved from its worker\'s allotments; a key with one never is', async (t) => {
    const { orgId, key: plain } = await provision(gw.url);
    const limited = await newKey(orgId, { name: 'limited', quota_per_minute: 1000 });
    const before = await settledInWorkers();
    for (let i = 0; i < 10; i++) t.equal((await chat(limited.secret, 1)).status, 200);
    await new Promise((r) => setTimeout(r, 500));
    const afterLimited = await settledInWorkers();
    t.equal(afterLimited, before, 'no call of the key with a quota was settled from an allotment');
    for (let i = 0; i < 10; i++) t.equal((await chat(plain, 1)).status, 200);
    let after = afterLimited;
    for (let i = 0; i < 30 && after === afterLimited; i++) {
      await new Promise((r) => setTimeout(r, 100));
      after = await settledInWorkers();
    }
    t.ok(after > afterLimited, `the key without a quota was (${after - afterLimited} calls settled in their worker)`);
  });

  t.test('a call reserved on its counted bound (the cheap one did not fit the funds) counts once in the key\'s window', async (t) => {
    // 'hello ' is one token in six bytes: the byte estimate (about 6.7 thousand micros) is above the balance, the count (about 1.9) fits.
    const { orgId } = await provision(gw.url, { balance: '0.005' });
    const limited = await newKey(orgId, { name: 'limited', quota_per_minute: 2 });
    const long = (key: string) =>
      fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'nw-swift-1', max_tokens: 1000, messages: [{ role: 'user', content: `[sim:words=2] ${'hello '.repeat(6800)}` }] }),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
    t.equal((await long(limited.secret)).status, 200, 'the first is served on its counted bound');
    t.equal((await long(limited.secret)).status, 200, 'so is the second: the first counted once, not twice');
    const third = await long(limited.secret);
    t.equal(third.status, 429);
    t.match(third.body.error.message, /key's own quota of 2 requests per minute/);
  });

  t.test('the console API validates quota_per_minute', async (t) => {
    const { orgId, keyId } = await provision(gw.url);
    for (const bad of [0, -1, 1_000_001, 2.5, '10', true]) {
      const r = await fetch(`${gw.url}/console/v1/organizations/${orgId}/keys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'bad', quota_per_minute: bad }),
      });
      t.equal(r.status, 400, `quota_per_minute ${JSON.stringify(bad)} → 400`);
      const body = (await r.json()) as any;
      t.equal(body.error.code, 'invalid_request');
      t.match(body.error.field_details, [{ field: 'quota_per_minute', issue: /whole number of calls from 1 to 1000000/ }]);
    }
    const key = await console_(gw.url, 'GET', `/keys/${keyId}`);
    t.equal(key.quota_per_minute, null, 'a key has no quota unless given one');
    const patched = await console_(gw.url, 'PATCH', `/keys/${keyId}`, { version: key.version, quota_per_minute: 60 });
    t.equal(patched.quota_per_minute, 60);
  });
}
