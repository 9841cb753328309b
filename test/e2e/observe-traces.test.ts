// OpenTelemetry traces (issue 37 item 3): with tracing.otlp_url set, each
// model call exports a span tree over OTLP/HTTP JSON to the receiver started
// here — the call's span (GenAI attributes) under the caller's traceparent,
// with its reservation, every supplier attempt and its settlement as
// children — and the supplier receives the trace context of its attempt. A
// collector that takes connections and never answers leaves calls served and
// the worker's memory within a bound (the queue is bounded; timed figures:
// bench/, never here).
import { createServer as createHttpServer, type IncomingMessage } from 'node:http';
import { createServer as createTcpServer, type Socket } from 'node:net';
import t from 'tap';
import { startSimulator } from '../../src/simulator/index.js';
import { freePort, startGateway, waitReady } from '../helpers/gateway.js';
import { ADMIN_TOKEN, provision } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Array<{ key: string; value: Record<string, unknown> }>;
}

/** OTLP JSON ids are hex in the JS exporter; base64 in the proto3 JSON mapping: both read as hex. */
const hex = (id: string | undefined): string => (id === undefined || id === '' ? '' : /^[0-9a-f]+$/i.test(id) ? id.toLowerCase() : Buffer.from(id, 'base64').toString('hex'));
const attr = (s: OtlpSpan, key: string): unknown => {
  const v = s.attributes.find((a) => a.key === key)?.value;
  if (v === undefined) return undefined;
  const raw = v.stringValue ?? v.intValue ?? v.doubleValue ?? v.boolValue;
  return typeof v.intValue !== 'undefined' ? Number(raw) : raw;
};

async function otlpReceiver(): Promise<{ url: string; spans: OtlpSpan[]; posts: () => number; close: () => Promise<void> }> {
  const spans: OtlpSpan[] = [];
  let posts = 0;
  const server = createHttpServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      posts++;
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      for (const rs of body.resourceSpans ?? []) for (const ss of rs.scopeSpans ?? []) for (const s of ss.spans ?? []) spans.push({ ...s, traceId: hex(s.traceId), spanId: hex(s.spanId), parentSpanId: hex(s.parentSpanId) });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  const port = await freePort();
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${port}/v1/traces`, spans, posts: () => posts, close: () => new Promise((r) => server.close(() => r())) };
}

const db = await testDatabase(t);
if (db !== null) {
  const sim = await startSimulator({ instances: ['alpha', 'beta', 'gamma'] });
  t.teardown(() => sim.close());
  const chat = (gw: { url: string }, key: string, content: string, headers: Record<string, string> = {}) =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ model: 'nw-swift-1', messages: [{ role: 'user', content }] }),
    }).then(async (r) => ({ status: r.status, rid: r.headers.get('x-request-id'), body: await r.text() }));

  t.test('a span tree per call under the caller\'s trace, GenAI attributes, the context passed on to the supplier', async (t) => {
    const receiver = await otlpReceiver();
    const gw = await startGateway({ env: { DATABASE_URL: db, SIMULATOR_URL: sim.url, ADMIN_TOKEN, BILLING_FLUSH_MS: '0', OTLP_TRACES_URL: receiver.url } });
    t.teardown(async () => {
      await gw.stop();
      await receiver.close();
    });
    await waitReady(gw);
    const { key } = await provision(gw.url);
    const seen: Array<{ instance: string; traceparent?: string }> = [];
    const off = sim.on((e) => e.type === 'request' && seen.push({ instance: e.instance, traceparent: e.traceparent }));
    t.teardown(off);
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const callerSpan = '00f067aa0ba902b7';
    const res = await chat(gw, key, 'traced [sim:status=503@alpha] [sim:words=5]', { traceparent: `00-${traceId}-${callerSpan}-01` });
    t.equal(res.status, 200);
    const line = await gw.waitForLog((l) => l.msg === 'request' && l.rid === res.rid);

    for (let i = 0; i < 100 && receiver.spans.filter((s) => s.traceId === traceId).length < 5; i++) await new Promise((r) => setTimeout(r, 100));
    const spans = receiver.spans.filter((s) => s.traceId === traceId);
    const root = spans.find((s) => s.parentSpanId === callerSpan);
    t.ok(root, "the call's span is a child of the caller's span, in the caller's trace");
    if (root === undefined) return;
    t.equal(root.name, 'chat nw-swift-1');
    t.equal(root.kind, 2, 'SERVER');
    t.equal(attr(root, 'gen_ai.operation.name'), 'chat');
    t.equal(attr(root, 'gen_ai.request.model'), 'nw-swift-1');
    t.equal(attr(root, 'gen_ai.provider.name'), 'sim-beta');
    t.equal(attr(root, 'gen_ai.usage.input_tokens'), line.input_tokens);
    t.equal(attr(root, 'gen_ai.usage.output_tokens'), line.output_tokens);
    t.equal(attr(root, 'tollgate.charged_micros'), line.charged_micros);
    t.equal(attr(root, 'tollgate.attempts'), 2);
    t.equal(attr(root, 'http.response.status_code'), 200);
    const children = spans.filter((s) => s.parentSpanId === root.spanId);
    t.same(children.map((s) => s.name).sort(), ['chat swift-1-mirror', 'chat swift-1-upstream', 'reservation', 'settlement'], 'reservation, both attempts, settlement');
    const failed = children.find((s) => s.name === 'chat swift-1-upstream')!;
    const answered = children.find((s) => s.name === 'chat swift-1-mirror')!;
    t.equal(failed.kind, 3, 'an attempt is a CLIENT span');
    t.equal(attr(failed, 'http.response.status_code'), 503);
    t.equal(attr(failed, 'error.type'), 'overloaded');
    t.equal(attr(answered, 'gen_ai.provider.name'), 'sim-beta');
    t.equal(attr(answered, 'gen_ai.request.model'), 'swift-1-mirror');
    t.ok(Number(attr(children.find((s) => s.name === 'reservation')!, 'tollgate.reserved_micros')) > 0, 'the reservation says what it held');
    t.same(
      seen.map((s) => [s.instance, s.traceparent]),
      [
        ['alpha', `00-${traceId}-${failed.spanId}-01`],
        ['beta', `00-${traceId}-${answered.spanId}-01`],
      ],
      "each supplier attempt received the trace context of its own span",
    );
    t.notMatch(JSON.stringify(receiver.spans), key, 'no key in the spans');
    t.notMatch(JSON.stringify(receiver.spans), /traced \[sim/, 'no prompt in the spans');

    // An embeddings call's attempt is made by a pool thread (fetchInPool): its context goes on all the same.
    seen.length = 0;
    const embedTrace = '5cf92f3577b34da6a3ce929d0e0e4737';
    const emb = await fetch(`${gw.url}/v1/embeddings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', traceparent: `00-${embedTrace}-${callerSpan}-01` },
      body: JSON.stringify({ model: 'nw-embed-1', input: ['traced embedding'], encoding_format: 'base64' }),
    });
    t.equal(emb.status, 200);
    await emb.text();
    for (let i = 0; i < 100 && !receiver.spans.some((s) => s.traceId === embedTrace && s.kind === 3); i++) await new Promise((r) => setTimeout(r, 100));
    const embedAttempt = receiver.spans.find((s) => s.traceId === embedTrace && s.kind === 3);
    t.ok(embedAttempt, "the embeddings attempt's span");
    t.same(seen.map((s) => s.traceparent), [`00-${embedTrace}-${embedAttempt?.spanId}-01`], 'the pool thread\'s attempt sent its span\'s trace context');

    // A call without a traceparent starts its own trace (sample_ratio 1).
    const own = await chat(gw, key, 'untraced [sim:words=2]');
    t.equal(own.status, 200);
    for (let i = 0; i < 50 && !receiver.spans.some((s) => s.parentSpanId === '' && attr(s, 'tollgate.request_id') === own.rid); i++) await new Promise((r) => setTimeout(r, 100));
    t.ok(receiver.spans.some((s) => s.parentSpanId === '' && attr(s, 'tollgate.request_id') === own.rid), 'a root span of its own');
  });

  t.test('a collector that takes connections and never answers: calls served, the worker\'s memory bounded', async (t) => {
    // A black hole: accepts, reads, never answers (worse than a refused port: each export waits for its timeout).
    const sockets = new Set<Socket>();
    const hole = createTcpServer((s) => {
      sockets.add(s);
      s.on('data', () => {});
      s.on('error', () => {});
    });
    const port = await freePort();
    await new Promise<void>((r) => hole.listen(port, '127.0.0.1', r));
    const gw = await startGateway({ env: { DATABASE_URL: db, SIMULATOR_URL: sim.url, ADMIN_TOKEN, BILLING_FLUSH_MS: '0', OTLP_TRACES_URL: `http://127.0.0.1:${port}/v1/traces`, TRACE_MAX_QUEUE: '256', QUOTA_PER_SECOND: '100000', QUOTA_PER_MINUTE: '1000000' } });
    t.teardown(async () => {
      await gw.stop();
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => hole.close(() => r()));
    });
    await waitReady(gw);
    const { key } = await provision(gw.url);
    const workerRss = async () => {
      const text = await (await fetch(`${gw.opsUrl}/metrics`)).text();
      return Number(/tollgate_process_resident_memory_bytes\{role="worker",pid="\d+"\} (\d+)/.exec(text)![1]);
    };
    const batch = async (n: number) => {
      let ok = 0;
      for (let i = 0; i < n; i += 10) ok += (await Promise.all(Array.from({ length: 10 }, () => chat(gw, key, 'hello [sim:words=3]')))).filter((r) => r.status === 200).length;
      return ok;
    };
    t.equal(await batch(300), 300, 'warm-up calls served');
    const before = await workerRss();
    t.equal(await batch(1500), 1500, 'every call served with the collector hanging');
    const grown = (await workerRss()) - before;
    t.ok(grown < 48 * 1024 * 1024, `worker memory grew ${Math.round(grown / 1024 / 1024)} MiB over 1500 traced calls (queue of 256 spans)`);
    t.ok(sockets.size <= 4, `at most a few connections held open to the collector (${sockets.size})`);
  });
}
