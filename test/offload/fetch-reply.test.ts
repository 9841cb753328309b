// Attempts made from a pool thread (surfaces whose replies are megabytes:
// embeddings, images; workers/fetch-reply.ts through OffloadPool.fetchTransport)
// keep every rule of attempts made on the event loop: failover on a 5xx or
// 429, a connect error or timeout, no failover on a 4xx; the size bound; an
// abort that reaches the supplier without ending the thread; and the reply
// decoded there arrives as the surface's data with its bytes moved, not
// copied. The real dispatcher, a real thread, the real simulator over HTTP.
import { createServer, type Socket } from 'node:net';
import pino from 'pino';
import t from 'tap';
import type { Route, Supplier } from '../../src/catalog/types.js';
import { GatewayError } from '../../src/errors/gateway-error.js';
import { Metrics } from '../../src/metrics/registry.js';
import { OffloadPool } from '../../src/offload/pool.js';
import { vectorOf } from '../../src/simulator/embeddings.js';
import { startSimulator, type SimulatorEvent } from '../../src/simulator/index.js';
import { CallAbort } from '../../src/suppliers/abort.js';
import { SupplierDispatcher, type DispatchSettings, type UpstreamReply } from '../../src/suppliers/dispatch.js';

const ENV = 'TOLLGATE_SUPPLIER_FETCH_REPLY_TEST';
process.env[ENV] = 'sk-test';
const MAX_REPLY_BYTES = 12 << 20;

const sim = await startSimulator({ instances: ['alpha', 'beta'] });
const events: SimulatorEvent[] = [];
sim.on((e) => events.push(e));
// A port that accepts connections and never answers: a supplier whose headers never come.
const silent: Socket[] = [];
const blackhole = createServer((s) => void silent.push(s));
await new Promise<void>((r) => blackhole.listen(0, '127.0.0.1', r));
const blackholeUrl = `http://127.0.0.1:${(blackhole.address() as { port: number }).port}`;

const settings: DispatchSettings = {
  connectTimeoutMs: 1000, headersTimeoutMs: 800, bodyTimeoutMs: 800, connectionsPerOrigin: 4, breakerThreshold: 100, breakerCooldownMs: 1000,
  credentialEnvAllow: [], maxReplyBytes: MAX_REPLY_BYTES, maxEventBytes: 1 << 16,
};
const metrics = new Metrics();
const dispatcher = new SupplierDispatcher(settings, pino({ level: 'silent' }), metrics);
const pool = new OffloadPool(0, 1, 64);
t.teardown(async () => {
  await dispatcher.close();
  await pool.close();
  await sim.close();
  for (const s of silent) s.destroy();
  blackhole.close();
});

function route(name: string, baseUrl: string): Route {
  const supplier: Supplier = { id: name, name, wireProtocol: 'openai-compatible', baseUrl, credentialEnv: ENV, protocols: ['embeddings'] };
  return { supplier, upstreamModel: 'embed-1', priority: 1 };
}
const alpha = route('alpha', `${sim.url}/alpha/v1`);
const beta = route('beta', `${sim.url}/beta/v1`);

/** One call's attempts through the pool thread, as pipeline/upstream.ts makes them for embeddings. */
function send(routes: Route[], input: string[], abort = new CallAbort()): Promise<UpstreamReply> {
  const body = JSON.stringify({ model: 'embed-1', encoding_format: 'base64', input });
  const transport = pool.fetchTransport('embeddings', {});
  if (transport === null) throw new Error('no fetch transport: the bench inline switch is set');
  return dispatcher.send('embeddings', routes, () => body, abort, null, transport);
}

/** The `embedding` base64 strings of a decoded embeddings reply's data bytes. */
function vectors(reply: UpstreamReply): string[] {
  if (reply.read?.read !== 'whole' || !reply.read.ok) throw new Error(`not a decoded reply: ${JSON.stringify(reply.read)}`);
  const data = (reply.read.decoded as { data: Uint8Array }).data;
  return (JSON.parse(Buffer.from(data).toString('utf8')) as Array<{ embedding: string }>).map((d) => d.embedding);
}

const float32Base64 = (text: string, dims: number): string => Buffer.from(vectorOf(text, dims).buffer).toString('base64');

t.test('a 128 × 3072 float reply is read and decoded in the thread: the data comes back as bytes it owns, each vector the float32 of the supplier number', async (t) => {
  const input = Array.from({ length: 128 }, (_, i) => (i === 0 ? '[sim:floats] [sim:dims=3072] first' : `input ${i}`));
  const reply = await send([alpha], input);
  t.equal(reply.statusCode, 200);
  t.equal(reply.body, null, 'no body for the event loop to read');
  const got = vectors(reply);
  const data = (reply.read as { decoded: { data: Uint8Array } }).decoded.data;
  t.equal(data.byteOffset, 0);
  // An answer buffer (surfaces/answer-bytes.ts): this answer alone, from offset 0, its end spare room rounded to a megabyte.
  t.ok(data.buffer.byteLength >= data.byteLength && data.buffer.byteLength - data.byteLength < 1 << 20, 'the data is its buffer, moved back, not a slice of a clone');
  t.equal(got.length, 128);
  t.equal(got[0], float32Base64(input[0]!, 3072));
  t.equal(got[127], float32Base64(input[127]!, 3072));
});

t.test('a written answer\'s buffer leaves the event loop with the next fetch task, and the next answers are whole', async (t) => {
  const input = Array.from({ length: 128 }, (_, i) => (i === 0 ? '[sim:floats] [sim:dims=3072] reuse' : `reuse ${i}`));
  const first = await send([alpha], input);
  const decoded = (first.read as { decoded: { data: Uint8Array } }).decoded;
  const buffer = decoded.data.buffer;
  const size = buffer.byteLength;
  t.ok(size > 2_000_000, 'a 2.8 MB answer');
  pool.answerWritten(decoded);
  t.equal(pool.spareAnswers.waiting, 1, 'kept for the next fetch task');
  pool.answerWritten(decoded);
  t.equal(pool.spareAnswers.waiting, 1, 'an answer written twice is handed back once');
  const second = await send([alpha], input);
  t.equal(buffer.byteLength, 0, 'moved out with the task: detached here, off this isolate\'s external memory');
  t.equal(pool.spareAnswers.waiting, 0);
  const got = vectors(second);
  t.equal(got.length, 128);
  t.ok(got.every((v, i) => v === float32Base64(input[i]!, 3072)), 'every vector of the next answer, written into a reused buffer, exact');
  // A reply decoded elsewhere (not moved in from a thread) is never handed anywhere.
  const mine = { data: Buffer.allocUnsafeSlow(1 << 20) };
  pool.answerWritten(mine);
  t.equal(pool.spareAnswers.waiting, 0, 'a buffer the thread did not move here stays here');
  t.equal(mine.data.byteLength, 1 << 20);
});

t.test('a 503 or a 429 on the first route: the next one answers (the body of the refusal dropped in the thread)', async (t) => {
  for (const status of [503, 429]) {
    const before = [sim.requestCount('alpha'), sim.requestCount('beta')];
    const reply = await send([alpha, beta], [`failover [sim:status=${status}@alpha]`, 'second']);
    t.equal(reply.route, beta, `${status}: answered by beta`);
    t.same([sim.requestCount('alpha') - before[0]!, sim.requestCount('beta') - before[1]!], [1, 1], `${status}: each route tried once`);
    t.equal(vectors(reply).length, 2);
  }
});

t.test('a 4xx the supplier meant for the request is the reply: no failover, nothing decoded', async (t) => {
  const betaBefore = sim.requestCount('beta');
  const reply = await send([alpha, beta], ['refused [sim:status=400]']);
  t.same([reply.route, reply.statusCode], [alpha, 400]);
  t.same(reply.read, { read: 'whole', ok: false, decoded: null });
  t.equal(sim.requestCount('beta'), betaBefore, 'beta never tried');
});

t.test('connection refused, then headers that never come: the next route; both: upstream_timeout / upstream_error', async (t) => {
  const closed = route('closed', 'http://127.0.0.1:1/v1');
  const silentRoute = route('silent', `${blackholeUrl}/v1`);
  t.equal((await send([closed, beta], ['after a refused connection'])).route, beta, 'refused → beta');
  t.equal((await send([silentRoute, beta], ['after a silent supplier'])).route, beta, 'headers timeout → beta');
  await t.rejects(send([silentRoute], ['only a silent supplier']), new GatewayError('upstream_timeout'));
  await t.rejects(send([closed], ['only a refused connection']), new GatewayError('upstream_error'));
});

t.test('a reply over suppliers.max_reply_bytes is refused in the thread: too_large, read no further', async (t) => {
  // 128 × 8192 floats: ~22 MB against a 12 MB bound.
  const input = Array.from({ length: 128 }, (_, i) => (i === 0 ? '[sim:floats] [sim:dims=8192] big' : `big ${i}`));
  const reply = await send([alpha], input);
  t.same(reply.read, { read: 'too_large', limit: MAX_REPLY_BYTES });
});

t.test('an abort while the supplier works reaches the supplier; the thread goes on serving', async (t) => {
  const from = events.length;
  const abort = new CallAbort();
  setTimeout(() => abort.abort(), 150);
  const started = performance.now();
  await t.rejects(send([alpha], ['slow [sim:delay_ms=600]'], abort));
  t.ok(performance.now() - started < 500, 'the call gave up at the abort, not at the answer');
  let aborted: SimulatorEvent | undefined;
  for (let i = 0; i < 50 && aborted === undefined; i++) {
    await new Promise((r) => setTimeout(r, 20));
    aborted = events.slice(from).find((e) => e.type === 'aborted');
  }
  t.ok(aborted, 'the simulator saw the request closed');
  t.equal(vectors(await send([alpha], ['after the abort'])).length, 1, 'the next attempt is served');
});

// Not a reproduction of the failure that made the fetch pool run with atomics: 'disabled' (offload/pool.ts):
// this passes with piscina's default too. It holds the behaviour: idle-closed connections cost nothing.
t.test('a keep-alive connection the supplier closed while the thread was idle is not reused: the next attempt opens a new one', async (t) => {
  // A supplier that answers on a kept-alive connection, then closes it after 200 ms of silence, with no Keep-Alive hint (as uWS does after its idle timeout).
  const accepted: Socket[] = [];
  const closer = createServer((socket) => {
    accepted.push(socket);
    let pending = '';
    let idle: NodeJS.Timeout | undefined;
    socket.on('data', (chunk) => {
      clearTimeout(idle);
      pending += chunk.toString('latin1');
      for (;;) {
        const end = pending.indexOf('\r\n\r\n');
        if (end < 0) return;
        const length = Number(/content-length: *(\d+)/i.exec(pending.slice(0, end))?.[1] ?? 0);
        if (pending.length < end + 4 + length) return;
        pending = pending.slice(end + 4 + length);
        const body = '{"object":"list","data":[{"object":"embedding","index":0,"embedding":"AACAPw=="}],"model":"embed-1","usage":{"prompt_tokens":1,"total_tokens":1}}';
        socket.write(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`);
        idle = setTimeout(() => socket.destroy(), 200);
      }
    });
  });
  await new Promise<void>((r) => closer.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    for (const s of accepted) s.destroy();
    closer.close();
  });
  const idleCloser = route('idle-closer', `http://127.0.0.1:${(closer.address() as { port: number }).port}/v1`);
  for (let i = 0; i < 3; i++) {
    if (i > 0) await new Promise((r) => setTimeout(r, 600));
    const reply = await send([idleCloser], [`after ${i * 600} ms of silence`]);
    t.equal(reply.read?.read, 'whole', `attempt ${i + 1} answered`);
  }
  t.equal(accepted.length, 3, 'each attempt after a closed connection opened a new one');
});
