// The operator listener (src/server/ops-server.ts) on its own: what it serves,
// what it refuses, when it is off, and that a port already taken fails the
// start by name (issue 30 item 13).
import { createServer } from 'node:net';
import t from 'tap';
import { loadConfig } from '../../src/config/load.js';
import { startOpsServer } from '../../src/server/ops-server.js';

const TEXT = '# TYPE tollgate_x gauge\ntollgate_x 1\n';

t.test('issue 30 item 13: the operator listener is loopback by default, and port 0 turns it off', async (t) => {
  const config = loadConfig({});
  t.same(config.ops, { host: '127.0.0.1', port: 9464 }, 'default: 127.0.0.1:9464');
  t.same(loadConfig({ OPS_HOST: '10.0.0.5', OPS_PORT: '0' }).ops, { host: '10.0.0.5', port: 0 }, 'OPS_HOST, OPS_PORT');
  t.throws(() => loadConfig({ OPS_PORT: '70000' }), /ops\.port/, 'a port out of range stops the start by name');
  for (const port of [0, null]) t.equal(await startOpsServer({ host: '127.0.0.1', port, metricsText: async () => TEXT, onError: () => {} }), null, `port ${port}: no listener`);
});

t.test('issue 30 item 13: it serves GET /metrics and nothing else', async (t) => {
  let failures = 0;
  let fail = false;
  const ops = await startOpsServer({ host: '127.0.0.1', port: await freeLoopbackPort(), metricsText: async () => (fail ? Promise.reject(new Error('no answer')) : TEXT), onError: () => failures++ });
  t.teardown(() => ops!.close());
  const base = `http://127.0.0.1:${ops!.port}`;
  const res = await fetch(`${base}/metrics`);
  t.equal(res.status, 200);
  t.equal(res.headers.get('content-type'), 'text/plain; version=0.0.4');
  t.equal(await res.text(), TEXT);
  const missing = await fetch(`${base}/healthz`);
  t.equal(missing.status, 404, 'anything else: 404');
  t.equal(((await missing.json()) as any).error.code, 'not_found', 'in the REST envelope');
  t.equal((await fetch(`${base}/metrics`, { method: 'POST', body: 'x' })).status, 405, 'POST /metrics: 405');
  fail = true;
  t.equal((await fetch(`${base}/metrics`)).status, 503, 'a scrape that cannot be gathered: 503');
  t.equal(failures, 1, 'and reported');
});

t.test('issue 30 item 13: a port already taken fails the start, naming the setting', async (t) => {
  const taken = createServer();
  await new Promise<void>((r) => taken.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => taken.close());
  const port = (taken.address() as { port: number }).port;
  await t.rejects(startOpsServer({ host: '127.0.0.1', port, metricsText: async () => TEXT, onError: () => {} }), /ops\.port/);
});

async function freeLoopbackPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}
