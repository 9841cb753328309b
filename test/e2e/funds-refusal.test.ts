// Issue 38 item 2: a refusal for funds does not wait for the tokenizer.
// - When no count could make the call fit (the balance cannot pay the output
//   bound alone, or nothing at all), the 402 comes at once: the pool is not
//   touched (the gateway here keeps no warm thread, PISCINA_MIN_THREADS=0, so
//   a count would wait for a thread to start).
// - A call that needs the count still gets it, from the thread the worker
//   started with (pools.piscina_min_threads, default 1): no cold start.
import t from 'tap';
import { startSimulator } from '../../src/simulator/index.js';
import { startGateway } from '../helpers/gateway.js';
import { ADMIN_TOKEN, organization, provision, usageRowsAtLeast } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';

const CALLERS = 8;
const ROUNDS = 5;

const db = await testDatabase(t);
if (db !== null) {
  const sim = await startSimulator({ instances: ['alpha', 'beta', 'gamma'] });
  t.teardown(() => sim.close());

  const chat = async (base: string, key: string, text: string, maxTokens: number): Promise<{ status: number; ms: number; body: any; rid: string }> => {
    const started = performance.now();
    const res = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'nw-swift-1', max_tokens: maxTokens, messages: [{ role: 'user', content: text }] }),
    });
    const body = await res.json();
    return { status: res.status, ms: performance.now() - started, body, rid: res.headers.get('x-request-id')! };
  };
  // ~40 KB of text, ~6,800 o200k tokens: the byte estimate (~40k tokens) is six times the count.
  const longText = `[sim:words=2] ${'hello '.repeat(6800)}`;

  t.test('issue 38 item 2: a zero-balance call is refused in under 50 ms with 8 concurrent callers, before any count', async (t) => {
    const gw = await startGateway({ env: { DATABASE_URL: db, SIMULATOR_URL: sim.url, ADMIN_TOKEN, PISCINA_MIN_THREADS: '0' } });
    t.teardown(() => gw.stop());
    const { key } = await provision(gw.url, { balance: '0.00' });
    // 8 KB: parsed inline (under pools.offload_body_bytes), so only a count could reach the pool, whose thread is not started.
    const text = `[sim:words=2] ${'hello '.repeat(1300)}`;
    const client: number[] = [];
    const rids: string[] = [];
    await Promise.all(
      Array.from({ length: CALLERS }, async () => {
        for (let i = 0; i < ROUNDS; i++) {
          const r = await chat(gw.url, key, text, 1000);
          t.equal(r.status, 402);
          t.equal(r.body.error?.code, 'insufficient_funds');
          client.push(r.ms);
          rids.push(r.rid);
        }
      }),
    );
    // The gateway's own time per refusal (its request log), and the client's, which adds this machine's scheduling.
    const served = await Promise.all(rids.map((rid) => gw.waitForLog((l) => l.rid === rid && l.msg === 'request').then((l) => Number(l.ms))));
    const p = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];
    t.comment(`402 in ms, gateway: median ${p(served, 0.5).toFixed(1)}, p90 ${p(served, 0.9).toFixed(1)}, slowest ${p(served, 1).toFixed(1)}; client: median ${p(client, 0.5).toFixed(1)}, slowest ${p(client, 1).toFixed(1)}`);
    // On a machine running only this test every refusal takes a few ms. On a shared 2-core machine (load ~30 while
    // this was written) a refusal is sometimes descheduled for 100+ ms, so the typical one is held to 50 ms and the
    // slowest to well under what a count on a cold thread costs there (1–10 s: the thread, its code and o200k).
    t.ok(p(served, 0.5) < 50, `refusals in under 50 ms (median ${p(served, 0.5).toFixed(1)} ms of ${served.length})`);
    t.ok(p(served, 1) < 1000, `none waited for a thread (slowest ${p(served, 1).toFixed(1)} ms)`);
    const scrape = await fetch(`${gw.opsUrl}/metrics`);
    t.equal(scrape.status, 200, 'the operator listener serves /metrics');
    const metrics = await scrape.text();
    t.notMatch(metrics, /tollgate_billing_input_counted_total(\{[^}]*\})? [1-9]/, 'no input was counted');
  });

  t.test('issue 38 item 2: a call that needs the count gets it at once from the warm thread', async (t) => {
    const gw = await startGateway({ env: { DATABASE_URL: db, SIMULATOR_URL: sim.url, ADMIN_TOKEN } });
    t.teardown(() => gw.stop());
    // nw-swift-1: 0.15 input, 0.60 output per million tokens. The byte estimate holds ~40k input tokens (~0.006)
    // plus 1000 output tokens (0.0006); counted, ~8.5k (~0.0013): only the counted one fits 0.006, twice.
    const { key, orgId } = await provision(gw.url, { balance: '0.006' });
    // The thread warms beside the worker's start (not before it listens): a call in its first moments waits for the rest of it.
    // (A build without a warm thread never logs it: the test goes on after 10 s, and its first count is cold.)
    await gw.waitForLog((l) => l.msg === 'pool warm', 10_000).catch(() => null);
    const first = await chat(gw.url, key, longText, 1000);
    t.equal(first.status, 200, 'admitted on the counted estimate');
    const second = await chat(gw.url, key, longText, 1000);
    t.equal(second.status, 200);
    // Cold, the first count would wait for the thread to start and load o200k (1–10 s on this machine); warm, it costs what the next one does.
    t.comment(`counted calls on a fresh gateway: first ${first.ms.toFixed(0)} ms, second ${second.ms.toFixed(0)} ms`);
    t.ok(first.ms - second.ms < 750, `the first count did not wait for a thread: ${first.ms.toFixed(0)} ms against ${second.ms.toFixed(0)} ms`);
    const [row] = await usageRowsAtLeast(gw.url, orgId, 2);
    t.ok(Number(row.reserved) < 0.003, `held the counted estimate (${row.reserved})`);
    t.equal((await organization(gw.url, orgId)).held, '0.00');
    // The output bound alone does not fit: refused at once, with no count.
    const over = await chat(gw.url, key, 'short', 32768);
    t.equal(over.status, 402, 'an output bound the balance cannot pay is refused');
  });
}
