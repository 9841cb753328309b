// The load generator's raw client (bench/raw-client.ts) against a real HTTP
// server: what it sends, answers read by Content-Length and by chunks (split
// across reads), statuses handed on, a connection the server closes, and
// calls beyond its connections queued rather than lost. Also how a job is
// split between load processes and their results merged (bench/measure.ts).
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import t, { type Test } from 'tap';
import { Histogram } from '../../bench/histogram.js';
import type { LoadJob, LoadResult } from '../../bench/loadgen-job.js';
import { mergeResults, splitJob } from '../../bench/measure.js';
import { RawPool } from '../../bench/raw-client.js';

interface Answer {
  status: number;
  body: string;
  error?: string;
}

function call(pool: RawPool): Promise<Answer> {
  return new Promise((resolve) => {
    let status = 0;
    let body = '';
    pool.dispatch(null, {
      onResponseStart: (_c, s) => void (status = s),
      onResponseData: (_c, chunk) => void (body += chunk.toString()),
      onResponseEnd: () => resolve({ status, body }),
      onResponseError: (_c, err) => resolve({ status, body, error: (err as NodeJS.ErrnoException).code ?? err.message }),
    });
  });
}

async function serve(t: Test, handle: (req: IncomingMessage, body: string, res: ServerResponse) => void): Promise<{ origin: string; sockets: Set<Socket> }> {
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => handle(req, body, res));
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, sockets };
}

t.test('answers by Content-Length and by chunks, on kept-alive connections; statuses handed on', async (t) => {
  const seen: Array<{ method?: string; url?: string; type?: string; auth?: string; body: string }> = [];
  const { origin, sockets } = await serve(t, (req, body, res) => {
    seen.push({ method: req.method, url: req.url, type: req.headers['content-type'], auth: req.headers.authorization, body });
    if (body === '"chunked"') {
      res.writeHead(200, { 'content-type': 'application/json' });
      // Several chunks, flushed apart so that they arrive in several reads.
      res.write('{"a":');
      setTimeout(() => res.write('"' + 'x'.repeat(70_000) + '"'), 5);
      setTimeout(() => res.end('}'), 10);
    } else if (body === '"refuse"') {
      res.writeHead(429, { 'content-length': '13' }).end('{"error":"x"}');
    } else res.writeHead(200, { 'content-length': String(Buffer.byteLength('{"ok":"é"}')) }).end('{"ok":"é"}');
  });
  const plain = new RawPool(origin, '/v1/chat/completions', { authorization: 'Bearer k' }, Buffer.from('"plain"'), 2);
  t.teardown(() => plain.destroy());
  for (let i = 0; i < 3; i++) t.same(await call(plain), { status: 200, body: '{"ok":"é"}' }, `call ${i + 1} by Content-Length`);
  t.same(seen[0], { method: 'POST', url: '/v1/chat/completions', type: 'application/json', auth: 'Bearer k', body: '"plain"' }, 'the request as the job describes it');
  t.equal(sockets.size, 1, 'one after another: one connection, kept alive');

  const chunked = new RawPool(origin, '/c', {}, Buffer.from('"chunked"'), 1);
  t.teardown(() => chunked.destroy());
  const big = await call(chunked);
  t.equal(big.status, 200);
  t.equal(big.body, `{"a":"${'x'.repeat(70_000)}"}`, 'chunks joined, sizes and CRLFs removed');
  t.same(await call(chunked), big, 'and again on the same connection');

  const refused = new RawPool(origin, '/r', {}, Buffer.from('"refuse"'), 1);
  t.teardown(() => refused.destroy());
  t.same(await call(refused), { status: 429, body: '{"error":"x"}' }, 'a refusal is handed on with its body');
});

t.test('calls beyond the connections wait for one; a connection the server drops fails its call, and the next call reconnects', async (t) => {
  let calls = 0;
  const { origin, sockets } = await serve(t, (req, _body, res) => {
    calls++;
    if (req.url === '/drop') return void req.socket.destroy();
    setTimeout(() => res.writeHead(200, { 'content-length': '2' }).end('{}'), 10);
  });
  const pool = new RawPool(origin, '/slow', {}, Buffer.from('{}'), 2);
  t.teardown(() => pool.destroy());
  const answers = await Promise.all(Array.from({ length: 7 }, () => call(pool)));
  t.same(answers, Array.from({ length: 7 }, () => ({ status: 200, body: '{}' })), 'all 7 answered');
  t.equal(calls, 7);
  t.ok(sockets.size <= 2, `at most 2 connections (${sockets.size})`);

  const dropping = new RawPool(origin, '/drop', {}, Buffer.from('{}'), 1);
  t.teardown(() => dropping.destroy());
  t.equal((await call(dropping)).error, 'ECONNRESET', 'the call fails with the connection');
  t.equal((await call(dropping)).error, 'ECONNRESET', 'the next call opens a new connection (and fails the same way)');
  t.equal(calls, 9);
});

t.test('a job split between load processes, and their results merged', async (t) => {
  const job: LoadJob = { origin: 'http://x', path: '/p', headers: {}, body: '{}', concurrency: 512, keepAlive: true, stream: false, expectSuffix: '}', warmupMs: 0, durationMs: 1000, maxRequests: 1001, ratePerSec: 400 };
  const parts = splitJob(job, 3);
  t.same(parts.map((p) => p.concurrency), [171, 171, 170], 'connections shared out');
  t.same(parts.map((p) => p.ratePerSec), [400 / 3, 400 / 3, 400 / 3], 'the pace too');
  t.ok(parts.every((p) => p.maxRequests === 334), 'and the request cap');
  t.same(splitJob({ ...job, concurrency: 1 }, 4).map((p) => p.concurrency), [1], 'never a process without a connection');

  const result = (ms: number[], errors: Record<string, number>, cpu: number): LoadResult => {
    const h = new Histogram();
    for (const x of ms) h.record(x * 1e6);
    const n = Object.values(errors).reduce((a, b) => a + b, 0);
    return { requests: ms.length, errors: n, errorKinds: errors, errorSamples: n ? ['e'] : [], elapsedMs: ms.length * 10, latency: h.toJSON(), ttfb: null, gap: null, events: 0, bytesIn: ms.length * 100, cpuUserMs: cpu, cpuSystemMs: cpu / 2 };
  };
  const merged = mergeResults([result([1, 2, 3], {}, 10), result([4, 5, 6, 7], { 'status 429': 2 }, 20)]);
  t.equal(merged.requests, 7);
  t.same(merged.errorKinds, { 'status 429': 2 });
  t.equal(merged.elapsedMs, 40, 'the longest recorded phase');
  t.equal(merged.cpuUserMs, 30);
  t.equal(merged.cpuSystemMs, 15);
  t.equal(merged.bytesIn, 700);
  const h = Histogram.from(merged.latency);
  t.equal(h.count, 7);
  t.equal(h.percentileMs(1), 7, 'the histograms added up');
  t.equal(merged.ttfb, null);
});
