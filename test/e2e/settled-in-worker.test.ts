// Issue 32 on the embedded default, over HTTP with two workers: the common
// call is settled in the worker that served it (the primary hears per batch),
// unary and streamed alike, and the books stay exact: every answered call has
// its usage row, and the balance the console shows, the balance in the store
// (row + the workers' parts) and credits − Σ charges agree to the micro.
import t from 'tap';
import { Agent, request } from 'undici';
import { parseMoney } from '../../src/money/money.js';
import { startGateway } from '../helpers/gateway.js';
import { ADMIN_TOKEN, allUsageRows, organization, provision } from '../helpers/provision.js';
import { scrape } from '../ledger/scrape.js';

const CALLS = 240;
const CONCURRENCY = 24;

t.test('240 calls on two workers: settled in their workers, told per batch, books exact', async (t) => {
  const gw = await startGateway({ workers: 2, env: { ADMIN_TOKEN, QUOTA_PER_SECOND: '100000', QUOTA_PER_MINUTE: '10000000' } });
  t.teardown(() => gw.stop());
  const dispatcher = new Agent({ connections: CONCURRENCY });
  t.teardown(() => dispatcher.close());
  const { orgId, key } = await provision(gw.url, { balance: '50.00' });
  // The console's answer about the new organization read its account, which grants no allotment for a second (docs/billing.md, Allotments).
  await new Promise((r) => setTimeout(r, 1100));
  const before = await scrape(gw.opsUrl);

  let next = 0;
  let ok = 0;
  const caller = async (): Promise<void> => {
    while (next < CALLS) {
      const i = next++;
      const stream = i % 3 === 0;
      const res = await request(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        dispatcher,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'nw-swift-1', messages: [{ role: 'user', content: `call ${i} [sim:words=12]` }], max_tokens: 64, stream }),
      });
      const text = await res.body.text();
      if (res.statusCode === 200 && (!stream || text.includes('[DONE]'))) ok++;
    }
  };
  const started = Date.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, caller));
  const seconds = Math.ceil((Date.now() - started) / 1000);
  t.equal(ok, CALLS, 'every call answered');

  // Written by the workers within billing.flush_ms (100 ms); a few seconds at most on a loaded machine.
  let rows: any[] = [];
  for (let i = 0; i < 50 && rows.length < CALLS; i++) {
    rows = await allUsageRows(gw.url, orgId);
    if (rows.length < CALLS) await new Promise((r) => setTimeout(r, 100));
  }
  t.equal(rows.length, CALLS, 'every answered call has its usage row');
  const charged = rows.reduce((n, r) => n + parseMoney(r.charged)!, 0);
  t.ok(charged > 0, 'the calls were charged');

  const after = await scrape(gw.opsUrl);
  const inWorkers = after.sum('tollgate_ledger_worker_settlements_total') - before.sum('tollgate_ledger_worker_settlements_total');
  // Through the actor go only the calls that ask for admissions themselves: an allotment's first, and about one or two per
  // worker per wall-clock second (admissions are good for one second); the others wait for that answer and stay in their worker.
  t.ok(CALLS - inWorkers <= 2 * 3 * (seconds + 1), `settled in their workers: ${inWorkers} of ${CALLS} in ${seconds} s`);
  // The same bound, counted where the round trips arrive: each reservation the primary answered is one call that left its worker.
  const reservations = after.sum('tollgate_ledger_reservations_total') - before.sum('tollgate_ledger_reservations_total');
  const grants = after.sum('tollgate_ledger_allotment_grants_total') - before.sum('tollgate_ledger_allotment_grants_total');
  t.ok(reservations >= 2 && reservations <= 2 * 3 * (seconds + 1), `reservations answered by the primary: ${reservations} for ${CALLS} calls`);
  t.ok(grants >= 2, `allotments granted or topped up: ${grants} (one at least per worker)`);

  const org = await organization(gw.url, orgId);
  t.equal(parseMoney(org.balance), parseMoney('50.00')! - charged, 'the console\'s balance = credits − Σ charges, to the micro');
  t.equal(parseMoney(org.held), 0, 'nothing held once the calls are done');
});
