// issue 13 item 1 (second half): the upstream URL, the headers and the
// credential are computed once per catalog revision per route, not per
// attempt. A revision brings new Route objects; until then, every attempt on a
// route reuses what its first attempt computed. Over real HTTP to a real server.
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import t from 'tap';
import type { Route, Supplier } from '../../src/catalog/types.js';
import { Metrics } from '../../src/metrics/registry.js';
import { CallAbort } from '../../src/suppliers/abort.js';
import { SupplierDispatcher } from '../../src/suppliers/dispatch.js';

const seen: Array<{ url: string; auth: string | undefined }> = [];
const server = createServer((req: IncomingMessage, res) => {
  seen.push({ url: req.url!, auth: req.headers.authorization });
  req.resume();
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
const dispatcher = new SupplierDispatcher(
  {
    connectTimeoutMs: 1000, headersTimeoutMs: 2000, bodyTimeoutMs: 2000, connectionsPerOrigin: 2, breakerThreshold: 5, breakerCooldownMs: 1000,
    credentialEnvAllow: [], maxReplyBytes: 1 << 20, maxEventBytes: 1 << 16,
  },
  pino({ level: 'silent' }),
  new Metrics(),
);
t.teardown(async () => {
  await dispatcher.close();
  server.close();
});

const ENV = 'TOLLGATE_SUPPLIER_TARGETS_TEST';
const revision = (prefix: string): Route => {
  const supplier: Supplier = { id: 's1', name: 'targets', wireProtocol: 'openai-compatible', baseUrl: `${base}/${prefix}/v1`, credentialEnv: ENV, protocols: ['chat_completions'] };
  return { supplier, upstreamModel: 'm', priority: 1 };
};
const attempt = async (route: Route) => {
  const reply = await dispatcher.send('chat_completions', [route], () => '{}', new CallAbort());
  await reply.body!.dump();
  return seen.at(-1)!;
};

t.test('item 1: URL, headers and credential are computed once per revision per route, not per attempt', async (t) => {
  process.env[ENV] = 'first-secret';
  const route = revision('rev1');
  t.same(await attempt(route), { url: '/rev1/v1/chat/completions', auth: 'Bearer first-secret' });

  // Between attempts on the same revision's route, neither the supplier object
  // nor the environment is read again.
  route.supplier.baseUrl = `${base}/changed/v1`;
  process.env[ENV] = 'second-secret';
  t.same(await attempt(route), { url: '/rev1/v1/chat/completions', auth: 'Bearer first-secret' }, 'second attempt reuses the first one\'s target');

  // A new revision (new Route objects) computes them afresh.
  t.same(await attempt(revision('rev2')), { url: '/rev2/v1/chat/completions', auth: 'Bearer second-secret' });
  delete process.env[ENV];
});
