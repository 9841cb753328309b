// The console's usage list holds every call answered before it was asked for
// (org-routes.ts: "complete up to now"), though calls from allotments are
// settled in their workers and written to the store every billing.flush_ms:
// ledger:sync has every worker cut its books and write them first
// (embedded-host.ts). Three workers, calls spread over them, then one read —
// no polling. It failed before (one row of two in chat-settle.test.ts, once
// allotments were granted right after an account view).
import t from 'tap';
import { startGateway } from '../helpers/gateway.js';
import { ADMIN_TOKEN, provision } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';

const db = await testDatabase(t);

if (db !== null) {
  // A flush far longer than the test: only the sync can have written the rows in time.
  const gw = await startGateway({ env: { DATABASE_URL: db, ADMIN_TOKEN, BILLING_FLUSH_MS: '5000', JOURNAL_MAX_LAG_MS: '20000' }, workers: 3 });
  t.teardown(() => gw.stop());

  async function chat(key: string, i: number): Promise<number> {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', connection: 'close' },
      body: JSON.stringify({ model: 'nw-swift-1', max_tokens: 16, messages: [{ role: 'user', content: `call ${i} [sim:words=3]` }] }),
    });
    await res.text();
    return res.status;
  }

  async function usage(orgId: string, path = 'usage'): Promise<any> {
    const res = await fetch(`${gw.url}/console/v1/organizations/${orgId}/${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    return res.json();
  }

  t.test('every call answered before the usage list was asked for is in it, whichever worker settled it', async (t) => {
    const { key, orgId } = await provision(gw.url, { balance: '10.00' });
    await chat(key, 0); // opens allotments; counted below too
    const statuses = await Promise.all(Array.from({ length: 29 }, (_, i) => chat(key, i + 1)));
    t.ok(statuses.every((s) => s === 200), 'all answered');
    const list = await usage(orgId);
    t.equal(list.total_requests, 30, 'the list counts all 30 calls at once');
    const daily = await usage(orgId, 'usage/daily');
    t.equal(daily.data.reduce((n: number, d: any) => n + d.requests, 0), 30, 'and so do the daily totals');
  });
}
