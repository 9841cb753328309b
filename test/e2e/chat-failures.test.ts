// Chat completions when things go wrong: failover before the first byte,
// suppliers all failing, a stream cut by the supplier, a client leaving
// mid-stream, a client that stops reading. Money is checked on every path.
import { connect, type Socket } from 'node:net';
import OpenAI from 'openai';
import t from 'tap';
import { startSimulator, type SimulatorEvent } from '../../src/simulator/index.js';
import { startGateway } from '../helpers/gateway.js';
import { ADMIN_TOKEN, organization, provision, usageRows } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';

const db = await testDatabase(t);
if (db !== null) {
  const sim = await startSimulator({ instances: ['alpha', 'beta', 'gamma'] });
  const events: SimulatorEvent[] = [];
  sim.on((e) => events.push(e));
  const gw = await startGateway({ env: { DATABASE_URL: db, SIMULATOR_URL: sim.url, ADMIN_TOKEN, BILLING_FLUSH_MS: '0' } });
  t.teardown(async () => {
    await gw.stop();
    await sim.close();
  });

  async function rowFor(orgId: string, requestId: string): Promise<any> {
    for (let i = 0; i < 50; i++) {
      const row = (await usageRows(gw.url, orgId)).find((r) => r.request_id === requestId);
      if (row) return row;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`no usage row for ${requestId}`);
  }

  t.test('failover: the first supplier answers 503, the second answers', async (t) => {
    const { key, orgId } = await provision(gw.url);
    const client = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const alphaBefore = sim.requestCount('alpha');
    const betaBefore = sim.requestCount('beta');
    const { data, response } = await client.chat.completions
      .create({ model: 'nw-swift-1', messages: [{ role: 'user', content: 'hi [sim:status=503@alpha] [sim:words=4]' }] })
      .withResponse();
    t.equal(data.choices[0].message.content!.trim().split(/\s+/).length, 4);
    t.equal(sim.requestCount('alpha') - alphaBefore, 1, 'alpha was tried');
    t.equal(sim.requestCount('beta') - betaBefore, 1, 'beta answered');
    const row = await rowFor(orgId, response.headers.get('x-request-id')!);
    t.equal(row.supplier, 'sim-beta');
    t.equal(row.outcome, 'completed');
  });

  t.test('every supplier fails: a JSON error in the chat envelope, nothing charged', async (t) => {
    const { key, orgId } = await provision(gw.url, { balance: '10.00' });
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'nw-swift-1', stream: true, messages: [{ role: 'user', content: '[sim:status=503]' }] }),
    });
    t.equal(res.headers.get('content-type'), 'application/json', 'a refusal before the first event is a JSON error');
    const body: any = await res.json();
    t.ok(res.status >= 500);
    t.same(Object.keys(body.error).sort(), ['code', 'message', 'param', 'type']);
    const row = await rowFor(orgId, res.headers.get('x-request-id')!);
    t.equal(row.outcome, 'failed');
    t.equal(row.charged, '0.00');
    const org = await organization(gw.url, orgId);
    t.equal(org.balance, '10.00', 'balance untouched');
    t.equal(org.held, '0.00', 'hold released');
  });

  t.test('[sim:fail_after=3] in a stream: three content chunks, no [DONE], outcome incomplete, charged for what was produced', async (t) => {
    const { key, orgId } = await provision(gw.url, { balance: '10.00' });
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'au-atlas-2', stream: true, messages: [{ role: 'user', content: '[sim:fail_after=3] [sim:words=10]' }] }),
    });
    t.equal(res.status, 200);
    let text = '';
    try {
      for await (const chunk of res.body as any) text += Buffer.from(chunk).toString();
    } catch {
      // the cut: the client sees the stream fail
    }
    const frames = text.split('\n\n').filter((f) => f.startsWith('data: '));
    const content = frames.filter((f) => f !== 'data: [DONE]').map((f) => JSON.parse(f.slice(6))).filter((c) => c.choices[0]?.delta?.content);
    t.equal(content.length, 3, 'three content chunks');
    t.notOk(text.includes('[DONE]'), 'no [DONE]');
    const row = await rowFor(orgId, res.headers.get('x-request-id')!);
    t.equal(row.outcome, 'incomplete');
    t.equal(row.output_tokens, 3, 'the three words produced, counted locally');
    t.ok(row.input_tokens > 0);
    t.not(row.charged, '0.00');
    const org = await organization(gw.url, orgId);
    t.equal(org.held, '0.00', 'the rest of the hold released');
  });

  t.test('a client that disconnects mid-stream: upstream aborted within 100 ms, hold settled as cancelled', async (t) => {
    const { key, orgId } = await provision(gw.url, { balance: '10.00' });
    const ac = new AbortController();
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'au-atlas-2', stream: true, messages: [{ role: 'user', content: '[sim:words=1000] [sim:delay_ms=20]' }] }),
      signal: ac.signal,
    });
    const rid = res.headers.get('x-request-id')!;
    const reader = res.body!.getReader();
    let got = 0;
    while (got < 3) {
      const { value } = await reader.read();
      got += (Buffer.from(value!).toString().match(/"content":"[^"]/g) ?? []).length;
    }
    const before = events.length;
    const leftAt = performance.now();
    ac.abort();
    let aborted: SimulatorEvent | undefined;
    for (let i = 0; i < 40 && aborted === undefined; i++) {
      await new Promise((r) => setTimeout(r, 10));
      aborted = events.slice(before).find((e) => e.type === 'aborted');
    }
    t.ok(aborted, 'the simulator saw the upstream request closed');
    if (aborted) t.ok(aborted.at - leftAt < 100, `within 100 ms (${(aborted.at - leftAt).toFixed(1)} ms)`);
    const row = await rowFor(orgId, rid);
    t.equal(row.outcome, 'cancelled');
    t.ok(row.output_tokens >= 3, 'charged for what was produced');
    const org = await organization(gw.url, orgId);
    t.equal(org.held, '0.00');
  });

  t.test('a client that stops reading: the gateway does not buffer the stream without bound', async (t) => {
    const { key } = await provision(gw.url, { balance: '10.00' });
    const rssOf = async () => {
      const text = await (await fetch(`${gw.opsUrl}/metrics`)).text();
      return [...text.matchAll(/tollgate_process_resident_memory_bytes\{role="worker",pid="\d+"\} (\d+)/g)].reduce((a, m) => a + Number(m[1]), 0);
    };
    const before = await rssOf();
    // A model writes at most its max_output_tokens (au-atlas-2: 65536, ~11 MB of SSE frames): four such streams at once.
    const body = JSON.stringify({ model: 'au-atlas-2', stream: true, max_tokens: 65536, messages: [{ role: 'user', content: '[sim:words=400000]' }] });
    const sockets: Socket[] = [];
    for (let i = 0; i < 4; i++) {
      const socket = connect(gw.port, '127.0.0.1');
      sockets.push(socket);
      await new Promise((r) => socket.once('connect', r));
      socket.write(
        `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      const first = await new Promise<Buffer>((r) => socket.once('data', r));
      t.match(first.toString('latin1'), /^HTTP\/1\.1 200/, 'the stream started');
      socket.pause(); // stop reading: the kernel buffers fill, then uWS reports backpressure
    }
    await new Promise((r) => setTimeout(r, 3000));
    const during = await rssOf();
    for (const socket of sockets) socket.destroy();
    // 4 × 65536 words is ~45 MB of SSE frames: unbounded buffering would show here.
    t.ok(during - before < 20 * 1024 * 1024, `worker RSS grew ${((during - before) / 1048576).toFixed(1)} MB while the reader was paused`);
  });
}
