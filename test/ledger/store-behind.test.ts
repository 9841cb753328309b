// The store stops answering while calls go on (billing.journal_max_lag_ms):
// settlements keep being taken and queued, new reservations wait for the
// store and are then refused with a 503 in the surface's envelope, nothing
// is held for them, and once the store is back every answered call has its
// usage row and the balance moved by exactly their charges.
import t from 'tap';
import { startSimulator } from '../../src/simulator/index.js';
import { startGateway } from '../helpers/gateway.js';
import { chatEnvelopeFault } from '../helpers/envelopes.js';
import { micros } from '../helpers/money.js';
import { ADMIN_TOKEN, console_, organization, provision } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';
import { proxiedDatabase } from '../helpers/tcp-proxy.js';
import { eventually } from '../e2e/scale-out-helpers.js';
import { scrape } from './scrape.js';

const MAX_LAG_MS = 300;

const db = await testDatabase(t);
if (db !== null) {
  const { proxy, url } = await proxiedDatabase(db);
  const sim = await startSimulator({ instances: ['alpha', 'beta'] });
  const gw = await startGateway({
    env: {
      DATABASE_URL: url,
      SIMULATOR_URL: sim.url,
      ADMIN_TOKEN,
      BILLING_FLUSH_MS: '100',
      JOURNAL_MAX_LAG_MS: String(MAX_LAG_MS),
      // Calls go one after another until the journal is behind: on a fast machine well over the default 100 a second.
      QUOTA_PER_SECOND: '100000',
      QUOTA_PER_MINUTE: '6000000',
    },
    workers: 2,
  });
  t.teardown(async () => {
    await gw.stop();
    await sim.close();
    await proxy.close();
  });
  const { orgId, key } = await provision(gw.url, { balance: '100.00' });
  const chat = (): Promise<Response> =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'nw-swift-1', messages: [{ role: 'user', content: 'hello [sim:words=4]' }], max_tokens: 16 }),
    });

  t.test('reservations wait for a store that is away, then 503; every answered call is charged once it is back', async (t) => {
    let answered = 0;
    for (let i = 0; i < 3; i++) {
      const res = await chat();
      t.equal(res.status, 200);
      await res.text();
      answered++;
    }
    await proxy.cut();
    let refusal: { status: number; body: any; ms: number } | null = null;
    const until = Date.now() + 20_000;
    while (refusal === null && Date.now() < until) {
      const started = Date.now();
      const res = await chat();
      const body = await res.json();
      if (res.status === 200) answered++;
      else refusal = { status: res.status, body, ms: Date.now() - started };
    }
    t.ok(refusal !== null, `a call is refused once the journal is ${MAX_LAG_MS} ms behind (${answered} answered in all)`);
    t.equal(refusal?.status, 503, 'with 503');
    t.equal(chatEnvelopeFault(refusal?.body), null, 'in the chat envelope');
    t.equal(refusal?.body.error.code, 'service_unavailable');
    t.ok((refusal?.ms ?? 0) >= 1500, `after waiting for the store (${refusal?.ms} ms)`);
    const during = await scrape(gw.opsUrl);
    t.ok(during.sum('tollgate_ledger_store_behind_refusals_total') >= 1, 'counted as refused');
    t.ok(during.sum('tollgate_ledger_journal_backlog') >= 1, `settlements still queued: ${during.sum('tollgate_ledger_journal_backlog')}`);

    await proxy.restore();
    await eventually('calls go through again', async () => {
      const res = await chat();
      await res.text();
      if (res.status === 200) answered++;
      return res.status === 200;
    }, 20_000);
    await eventually('the journal is written', async () => (await scrape(gw.opsUrl)).sum('tollgate_ledger_journal_backlog') === 0, 20_000);
    // The writes the cut failed were retried by the statement; a call settled after that is a fresh batch, written by COPY.
    const after = await chat();
    await after.text();
    t.equal(after.status, 200);
    answered++;
    await eventually('its batch is written', async () => (await scrape(gw.opsUrl)).sum('tollgate_ledger_journal_backlog') === 0, 10_000);
    const paths = await scrape(gw.opsUrl);
    t.ok(paths.sum('tollgate_ledger_store_statement_writes_total') >= 1, 'the retries went by the statement');
    t.ok(paths.sum('tollgate_ledger_store_copy_writes_total') >= 1, 'a fresh batch by COPY');
    const usage = async (): Promise<any> => console_(gw.url, 'GET', `/organizations/${orgId}/usage`);
    await eventually('the usage rows are in', async () => (await usage()).total_requests >= answered, 10_000);
    const totals = await usage();
    t.equal(totals.total_requests, answered, 'one usage row per answered call, none for the refused ones');
    const charged = micros(totals.total_charged);
    t.ok(charged > 0);
    await eventually('nothing held', async () => (await scrape(gw.opsUrl)).sum('tollgate_ledger_held_micros') === 0, 10_000);
    const org = await organization(gw.url, orgId);
    t.equal(micros(org.balance), 100_000_000 - charged, 'the balance moved by exactly the charges');
    t.equal(micros(org.held), 0);
  });
}
