// Issue 30 item 13: /metrics (every organization's held amount, the
// instance's internals) was public on the API port. It is now served by the
// primary on the operator listener (ops.host, ops.port: loopback by
// default), still covering every process; /healthz and /readyz stay on the
// API port for load balancers.
import t from 'tap';
import { startGateway, waitReady } from '../helpers/gateway.js';
import { restEnvelopeFault } from '../helpers/envelopes.js';

const gw = await startGateway({ workers: 2 });
t.teardown(() => gw.stop());

t.test('issue 30 item 13: /metrics is not on the API port', async (t) => {
  for (const method of ['GET', 'POST', 'HEAD']) {
    const res = await fetch(`${gw.url}/metrics`, { method });
    t.equal(res.status, 404, `${method} /metrics on the API port: 404`);
    if (method !== 'HEAD') t.equal(restEnvelopeFault(await res.json(), res.headers.get('x-request-id') ?? undefined), null, 'in the REST envelope');
  }
  t.equal((await fetch(`${gw.url}/healthz`)).status, 200, '/healthz stays on the API port');
  await waitReady(gw);
  t.equal((await fetch(`${gw.url}/readyz`)).status, 200, '/readyz stays on the API port');
});

t.test('issue 30 item 13: the operator listener serves the whole instance', async (t) => {
  const listening = await gw.waitForLog((l) => l.msg === 'listening');
  t.equal(listening.ops, `127.0.0.1:${new URL(gw.opsUrl).port}`, 'the start names the operator address');
  // Every worker counts its own requests: a few on each (connections are spread by the kernel).
  for (let i = 0; i < 20; i++) await (await fetch(`${gw.url}/healthz`, { headers: { connection: 'close' } })).text();
  const res = await fetch(`${gw.opsUrl}/metrics`);
  t.equal(res.status, 200);
  const text = await res.text();
  t.equal((text.match(/tollgate_process_resident_memory_bytes\{role="worker"/g) ?? []).length, 2, 'both workers report');
  t.match(text, /tollgate_process_resident_memory_bytes\{role="primary",pid="\d+"\} \d+/, 'and the primary');
  t.match(text, /^tollgate_ledger_held_micros \d+$/m, 'with the ledger gauges');
  const healthz = /tollgate_requests_total\{surface="ops",status="200"\} (\d+)/.exec(text);
  t.ok(healthz !== null && Number(healthz[1]) >= 22, `requests of both workers summed (${healthz?.[1]})`);
});
