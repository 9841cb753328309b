// Issue 30 item 5: one organization's slow embeddings calls cannot fill the
// pool's fetch capacity (32 supplier requests per fetch thread; the per-key
// cap is 128 per worker). While one organization has 96 calls waiting on a
// slow supplier, another organization's embeddings call is answered at once:
// each organization holds at most a share of the pool (offload/fair-share.ts),
// and a freed slot goes to the organization holding fewest.
import t from 'tap';
import { gatewayWithSimulator } from '../helpers/gateway.js';
import { organization, provision, usageRowsAtLeast } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';

const SLOW_MS = 4000;

const db = await testDatabase(t);
if (db !== null) {
  const { gw, sim } = await gatewayWithSimulator(t, db);

  const embed = async (key: string, text: string, signal?: AbortSignal): Promise<{ status: number; ms: number }> => {
    const started = performance.now();
    const res = await fetch(`${gw.url}/v1/embeddings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'nw-embed-1', input: [text], encoding_format: 'base64' }),
      signal,
    });
    await res.arrayBuffer();
    return { status: res.status, ms: performance.now() - started };
  };

  t.test('issue 30 item 5: 96 slow embeddings calls of one organization leave the pool to another', async (t) => {
    const flooder = await provision(gw.url);
    const other = await provision(gw.url);
    // The fetch thread started (its first task), so the timing below is the queue's alone.
    const warm = await embed(other.key, 'warm up');
    t.equal(warm.status, 200);
    const flood = Array.from({ length: 96 }, (_, i) => embed(flooder.key, `slow ${i} [sim:delay_ms=${SLOW_MS}]`));
    await new Promise((r) => setTimeout(r, 500));
    const beside = await embed(other.key, 'beside the flood');
    t.equal(beside.status, 200);
    t.ok(beside.ms < 1000, `answered in ${beside.ms.toFixed(0)} ms while the flood waits ${SLOW_MS} ms a call`);
    const results = await Promise.all(flood);
    t.ok(
      results.every((r) => r.status === 200),
      'every call of the flood was answered in the end',
    );
    const slowest = Math.max(...results.map((r) => r.ms));
    t.comment(`the flood's slowest call: ${slowest.toFixed(0)} ms (${SLOW_MS} ms each at the supplier)`);
    t.equal((await organization(gw.url, flooder.orgId)).held, '0.00', 'nothing left held');
  });

  t.test('a call waiting for its share of the fetch pool withdraws when its client leaves', async (t) => {
    const flooder = await provision(gw.url);
    const flood = Array.from({ length: 40 }, (_, i) => embed(flooder.key, `slow ${i} [sim:delay_ms=2000]`));
    await new Promise((r) => setTimeout(r, 300));
    // Past the organization's share (24 of 32): these wait in the gate; their clients leave.
    const before = sim.requestCount('alpha') + sim.requestCount('beta') + sim.requestCount('gamma');
    const ac = new AbortController();
    const gone = Array.from({ length: 5 }, (_, i) => embed(flooder.key, `gone ${i}`, ac.signal).catch(() => null));
    await new Promise((r) => setTimeout(r, 200));
    ac.abort();
    await Promise.all(gone);
    const results = await Promise.all(flood);
    t.ok(results.every((r) => r.status === 200));
    await new Promise((r) => setTimeout(r, 300));
    const sent = sim.requestCount('alpha') + sim.requestCount('beta') + sim.requestCount('gamma') - before;
    t.ok(sent <= 16, `the withdrawn calls never reached a supplier (${sent} requests after them, the flood's 16 waiting included)`);
    const cancelled = (await usageRowsAtLeast(gw.url, flooder.orgId, 45)).filter((r) => r.outcome === 'cancelled');
    t.equal(cancelled.length, 5, 'the five settled cancelled');
    t.same(
      cancelled.map((r) => r.charged),
      ['0.00', '0.00', '0.00', '0.00', '0.00'],
      'and charged nothing: no supplier read them',
    );
    t.equal((await organization(gw.url, flooder.orgId)).held, '0.00', 'nothing left held');
  });
}
