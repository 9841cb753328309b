// Lifecycle of an exchange: client disconnects, backpressure, events and counts.
import net from 'node:net';
import t from 'tap';
import { request } from 'undici';
import { startSimulator, type Simulator, type SimulatorEvent } from '../../src/simulator/index.js';

let sim: Simulator;
t.before(async () => {
  sim = await startSimulator({ instances: ['alpha', 'beta'] });
});
t.teardown(() => sim.close());

async function call(instance: string, path: string, body: unknown): Promise<number> {
  const res = await request(`${sim.url}/${instance}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer x' },
    body: JSON.stringify(body),
  });
  try {
    await res.body.text();
  } catch {
    // a deliberately dropped answer
  }
  return res.statusCode;
}

/** Raw request on its own socket, so the test controls reading and closing. */
function rawPost(path: string, body: unknown): net.Socket {
  const text = JSON.stringify(body);
  const sock = net.connect(sim.port, '127.0.0.1');
  sock.write(`POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\n\r\n${text}`);
  return sock;
}

const user = (text: string) => [{ role: 'user', content: text }];
const chat = (text: string, extra: object = {}) => ({ model: 'm', messages: user(text), ...extra });
const msgs = (text: string, extra: object = {}) => ({ model: 'm', max_tokens: 1000, messages: user(text), ...extra });
const resp = (text: string, extra: object = {}) => ({ model: 'm', input: text, ...extra });

t.test('client disconnect mid-stream fires aborted within 100 ms', async (t) => {
  const events: SimulatorEvent[] = [];
  const off = sim.on((e) => events.push(e));
  const sock = rawPost('/beta/v1/chat/completions', chat('[sim:words=50] [sim:delay_ms=20]', { stream: true }));
  let got = '';
  await new Promise<void>((resolve) => {
    sock.on('data', (d) => {
      got += d.toString();
      if (got.includes('"content":" quick"')) resolve();
    });
  });
  const destroyedAt = performance.now();
  sock.destroy();
  const aborted = await new Promise<SimulatorEvent | undefined>((resolve) => {
    const timer = setInterval(() => {
      const e = events.find((x) => x.type === 'aborted');
      if (e || performance.now() - destroyedAt > 1000) {
        clearInterval(timer);
        resolve(e);
      }
    }, 2);
  });
  off();
  if (aborted === undefined) return t.fail('no aborted event within 1 s');
  t.ok(aborted.at - destroyedAt < 100, `aborted ${(aborted.at - destroyedAt).toFixed(1)} ms after the disconnect`);
  t.match(aborted, { instance: 'beta', protocol: 'chat_completions', stream: true });
  t.same(events.map((e) => e.type), ['request', 'aborted'], 'no finished event after the abort');
});

t.test('a paused reader gets every chunk once it resumes (backpressure)', async (t) => {
  const n = 150000; // ~28 MB of frames: far more than the socket buffers hold
  const sock = rawPost('/alpha/v1/chat/completions', chat(`[sim:words=${n}]`, { stream: true }));
  sock.pause();
  await new Promise((r) => setTimeout(r, 300));
  const parts: Buffer[] = [];
  await new Promise<void>((resolve) => {
    sock.on('data', (d: Buffer) => {
      parts.push(d);
      if (d.subarray(-40).toString('latin1').includes('data: [DONE]')) resolve();
    });
    sock.resume();
  });
  sock.destroy();
  const all = Buffer.concat(parts).toString('latin1');
  let chunks = 0;
  for (let i = all.indexOf('"delta":{"content":"'); i !== -1; i = all.indexOf('"delta":{"content":"', i + 1)) chunks++;
  t.equal(chunks, n, 'every word arrived');
});

t.test('events and request counts', async (t) => {
  const events: SimulatorEvent[] = [];
  const off = sim.on((e) => events.push(e));
  const before = sim.requestCount('beta');
  const total = sim.requestCount();
  t.equal(await call('beta', '/v1/embeddings', { model: 'e', input: 'x' }), 200);
  t.equal(await call('beta', '/v1/messages', msgs('x', { stream: true })), 200);
  t.equal(await call('beta', '/v1/responses', resp('[sim:fail_after=1]', { stream: true })), 200);
  off();
  t.equal(await call('beta', '/v1/embeddings', { model: 'e', input: 'x' }), 200);
  t.equal(sim.requestCount('beta'), before + 4);
  t.equal(sim.requestCount(), total + 4);
  t.same(
    events.map((e) => [e.type, e.protocol, e.stream]),
    [
      ['request', 'embeddings', false], ['finished', 'embeddings', false],
      ['request', 'native_messages', true], ['finished', 'native_messages', true],
      ['request', 'responses', true], ['finished', 'responses', true],
    ],
    'a deliberate drop counts as finished, not aborted; unsubscribe stops events',
  );
  t.ok(events.every((e, i) => i === 0 || e.at >= (events[i - 1] as SimulatorEvent).at));
});

t.test('a client gone during a unary delay is reported, and nothing is written after', async (t) => {
  const events: SimulatorEvent[] = [];
  const off = sim.on((e) => events.push(e));
  const sock = rawPost('/alpha/v1/messages', msgs('[sim:delay_ms=80]'));
  await new Promise((r) => setTimeout(r, 20));
  sock.destroy();
  await new Promise((r) => setTimeout(r, 120));
  off();
  t.same(events.map((e) => [e.type, e.protocol]), [['request', 'native_messages'], ['aborted', 'native_messages']]);
  t.equal(await call('alpha', '/v1/messages', msgs('still serving')), 200);
});

t.test('close() drops answers in flight and stops listening', async (t) => {
  const other = await startSimulator({ instances: ['solo'] });
  const events: SimulatorEvent[] = [];
  other.on((e) => events.push(e));
  const res = await request(`${other.url}/solo/v1/chat/completions`, {
    method: 'POST',
    body: JSON.stringify(chat('[sim:words=100] [sim:delay_ms=20]', { stream: true })),
  });
  t.equal(res.statusCode, 200);
  const reading = res.body.text();
  await new Promise((r) => setTimeout(r, 50));
  await other.close();
  await t.rejects(reading, 'the stream is cut');
  await t.rejects(request(`${other.url}/solo/v1/chat/completions`, { method: 'POST', body: '{}' }), 'no longer listening');
  t.same(events.map((e) => e.type), ['request'], 'closing is neither a finish nor a client abort');
  await other.close();
});
