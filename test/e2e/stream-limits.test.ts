// Limits on what a stream may cost the gateway: a client that stops reading
// (issue 12 item 6) and a supplier whose reply has no end (issue 12 item 8).
// A real gateway, a real simulator, raw sockets where a well-behaved client
// would hide the behaviour; money and the worker's memory checked each time.
import { readFileSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { startSimulator, type SimulatorEvent } from '../../src/simulator/index.js';
import { startGateway, tempDir } from '../helpers/gateway.js';
import { ADMIN_TOKEN, organization, provision, usageRows } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';

const STALLED_CLIENT_MS = 1500;
const MAX_REPLY_BYTES = 1 << 20;
const MAX_EVENT_BYTES = 64 << 10;
const FLOOD = 100_000_000; // 100 MB without a newline

const db = await testDatabase(t);
if (db !== null) {
  const sim = await startSimulator({ instances: ['alpha', 'beta', 'gamma'] });
  const events: SimulatorEvent[] = [];
  sim.on((e) => events.push(e));
  const dir = tempDir();
  const config = join(dir, 'limits.json');
  writeFileSync(config, JSON.stringify({ suppliers: { max_reply_bytes: MAX_REPLY_BYTES, max_event_bytes: MAX_EVENT_BYTES } }));
  const gw = await startGateway({
    env: { DATABASE_URL: db, SIMULATOR_URL: sim.url, ADMIN_TOKEN, BILLING_FLUSH_MS: '0', STALLED_CLIENT_MS: String(STALLED_CLIENT_MS), TOLLGATE_CONFIG: config },
  });
  t.teardown(async () => {
    await gw.stop();
    await sim.close();
  });

  async function workerPid(): Promise<number> {
    const text = await (await fetch(`${gw.opsUrl}/metrics`)).text();
    const m = /tollgate_process_resident_memory_bytes\{role="worker",pid="(\d+)"\}/.exec(text);
    if (m === null) throw new Error('no worker in /metrics');
    return Number(m[1]);
  }

  /** VmRSS or VmHWM (peak) of a process, in bytes. */
  function memory(pid: number, field: 'VmRSS' | 'VmHWM'): number {
    const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return Number(m![1]) * 1024;
  }

  /** Starts measuring a peak: resets the process's VmHWM to its current RSS. */
  function resetPeak(pid: number): number {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return memory(pid, 'VmRSS');
  }

  async function onlyRow(orgId: string): Promise<any> {
    for (let i = 0; i < 100; i++) {
      const rows = await usageRows(gw.url, orgId);
      if (rows.length > 0) return rows[0];
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`no usage row for ${orgId}`);
  }

  async function nextEvent(from: number, type: SimulatorEvent['type'], timeoutMs: number): Promise<SimulatorEvent | undefined> {
    const deadline = performance.now() + timeoutMs;
    while (performance.now() < deadline) {
      const e = events.slice(from).find((x) => x.type === type);
      if (e !== undefined) return e;
      await new Promise((r) => setTimeout(r, 20));
    }
    return undefined;
  }

  function rawPost(key: string, body: unknown): Socket {
    const json = JSON.stringify(body);
    const socket = connect(gw.port, '127.0.0.1');
    socket.on('error', () => {});
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`,
    );
    return socket;
  }

  async function stillServes(t: Test, pid: number): Promise<void> {
    const { key } = await provision(gw.url, { balance: '1.00' });
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'nw-swift-1', stream: true, messages: [{ role: 'user', content: '[sim:words=3]' }] }),
    });
    t.equal(res.status, 200, 'the worker still answers a normal stream');
    t.match(await res.text(), /data: \[DONE\]/);
    t.equal(await workerPid(), pid, 'same worker process');
  }

  t.test('issue 12 item 6: a client that never reads a long stream is cut after http.stalled_client_ms, the upstream aborted, settled as cancelled', async (t) => {
    const pid = await workerPid();
    const { key, orgId } = await provision(gw.url, { balance: '10.00' });
    const from = events.length;
    const startedAt = performance.now();
    // The first 50,000 words (~3.8 MB of frames) as fast as the sockets take them: more than the client's side holds
    // (~20,000 words were delivered before the cut in earlier runs), so the gateway sees the client stall. The rest
    // 200 ms apart: the supplier is still mid-answer when the gateway cuts the call, however much the sockets between
    // the gateway and the supplier absorb. (With all 65,536 words at once, a loaded machine's loopback buffers once
    // took the whole answer before the cut, and the supplier finished: nothing left to abort.)
    // No 'data' listener: the socket never reads past its first few kilobytes.
    const socket = rawPost(key, { model: 'au-atlas-2', stream: true, max_tokens: 65536, messages: [{ role: 'user', content: '[sim:words=65536] [sim:delay_after=50000] [sim:delay_ms=200]' }] });
    t.teardown(() => socket.destroy());
    const aborted = await nextEvent(from, 'aborted', 9000);
    t.ok(aborted, 'the simulator saw the upstream request closed');
    t.notOk(events.slice(from).some((e) => e.type === 'finished'), 'the supplier did not get to finish the answer');
    // uWS alone cuts such a client after 10 s; the setting (1.5 s here) must be what cut it.
    if (aborted) t.ok(aborted.at - startedAt < STALLED_CLIENT_MS + 4000, `cut ${((aborted.at - startedAt) / 1000).toFixed(1)} s after the request`);
    const row = await onlyRow(orgId);
    t.equal(row.outcome, 'cancelled');
    t.ok(row.output_tokens > 0 && row.output_tokens < 65536, `charged for what was sent (${row.output_tokens} tokens)`);
    t.ok(Number(row.charged) > 0 && Number(row.charged) < Number(row.reserved), `charged ${row.charged} of ${row.reserved} reserved`);
    const org = await organization(gw.url, orgId);
    t.equal(org.held, '0.00', 'no hold left');
    t.ok(gw.logs.some((l) => l.msg === 'client stopped reading the stream; cancelled'), 'logged');
    await stillServes(t, pid);
  });

  t.test('issue 12 item 8: a stream of 100 MB with no newline, before any event: 502 in the chat envelope, nothing charged, memory bounded, no failover', async (t) => {
    const pid = await workerPid();
    const { key, orgId } = await provision(gw.url, { balance: '10.00' });
    const before = resetPeak(pid);
    const from = events.length;
    const requestsBefore = sim.requestCount();
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'nw-swift-1', stream: true, messages: [{ role: 'user', content: `[sim:flood=${FLOOD}]` }] }),
    });
    t.equal(res.status, 502);
    t.equal(res.headers.get('content-type'), 'application/json');
    const body: any = await res.json();
    t.equal(body.error.code, 'upstream_error');
    t.equal(body.error.type, 'api_error');
    const growth = memory(pid, 'VmHWM') - before;
    t.ok(growth < 40 << 20, `worker peak RSS grew ${(growth / 1048576).toFixed(1)} MB for a 100 MB reply`);
    t.ok(await nextEvent(from, 'aborted', 3000), 'the gateway dropped the supplier connection mid-flood');
    t.equal(sim.requestCount() - requestsBefore, 1, 'not retried on another route');
    const row = await onlyRow(orgId);
    t.equal(row.outcome, 'failed');
    t.equal(row.charged, '0.00');
    const org = await organization(gw.url, orgId);
    t.equal(org.held, '0.00');
    t.equal(org.balance, '10.00');
    const metrics = await (await fetch(`${gw.opsUrl}/metrics`)).text();
    t.match(metrics, /kind="oversize"/, 'counted as an oversize supplier reply');
    await stillServes(t, pid);
  });

  t.test('issue 12 item 8: a stream that floods after three words ends without [DONE], charged for the three words', async (t) => {
    const pid = await workerPid();
    const { key, orgId } = await provision(gw.url, { balance: '10.00' });
    const before = resetPeak(pid);
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'au-atlas-2', stream: true, messages: [{ role: 'user', content: `[sim:fail_after=3] [sim:words=10] [sim:flood=${FLOOD}]` }] }),
    });
    t.equal(res.status, 200);
    let text = '';
    try {
      for await (const chunk of res.body as any) text += Buffer.from(chunk).toString();
    } catch {
      // the cut: the client sees the stream fail
    }
    const growth = memory(pid, 'VmHWM') - before;
    t.ok(growth < 40 << 20, `worker peak RSS grew ${(growth / 1048576).toFixed(1)} MB`);
    const frames = text.split('\n\n').filter((f) => f.startsWith('data: '));
    const content = frames.filter((f) => f !== 'data: [DONE]').map((f) => JSON.parse(f.slice(6))).filter((c) => c.choices[0]?.delta?.content);
    t.equal(content.length, 3, 'the three words');
    t.notOk(text.includes('[DONE]'), 'no [DONE]');
    const row = await onlyRow(orgId);
    t.equal(row.outcome, 'incomplete');
    t.equal(row.output_tokens, 3);
    t.not(row.charged, '0.00');
    const org = await organization(gw.url, orgId);
    t.equal(org.held, '0.00');
    await stillServes(t, pid);
  });

  t.test('issue 12 item 8: a unary reply over suppliers.max_reply_bytes: 502 in the chat envelope, nothing charged, memory bounded, no failover', async (t) => {
    const pid = await workerPid();
    const { key, orgId } = await provision(gw.url, { balance: '10.00' });
    const before = resetPeak(pid);
    const from = events.length;
    const requestsBefore = sim.requestCount();
    // A valid JSON answer followed by 100 MB of whitespace: still valid JSON, only too large.
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'nw-swift-1', messages: [{ role: 'user', content: `[sim:words=3] [sim:flood=${FLOOD}]` }] }),
    });
    t.equal(res.status, 502);
    const body: any = await res.json();
    t.same(Object.keys(body.error).sort(), ['code', 'message', 'param', 'type']);
    t.equal(body.error.code, 'upstream_error');
    const growth = memory(pid, 'VmHWM') - before;
    t.ok(growth < 40 << 20, `worker peak RSS grew ${(growth / 1048576).toFixed(1)} MB for a 100 MB reply`);
    t.ok(await nextEvent(from, 'aborted', 3000), 'the gateway dropped the supplier connection');
    t.equal(sim.requestCount() - requestsBefore, 1, 'not retried on another route');
    const row = await onlyRow(orgId);
    t.equal(row.outcome, 'failed');
    t.equal(row.charged, '0.00');
    const org = await organization(gw.url, orgId);
    t.equal(org.held, '0.00');
    t.equal(org.balance, '10.00');
    await stillServes(t, pid);
  });

  t.test('a unary reply just under suppliers.max_reply_bytes is answered', async (t) => {
    const { key } = await provision(gw.url, { balance: '10.00' });
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'nw-swift-1', messages: [{ role: 'user', content: `[sim:words=3] [sim:flood=${MAX_REPLY_BYTES - 4096}]` }] }),
    });
    t.equal(res.status, 200);
    const body: any = await res.json();
    t.equal(body.choices[0].message.content, 'the quick brown');
  });
}
