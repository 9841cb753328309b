// Reliability, client side (issue 17): clients that leave at every stage of a
// call, read slowly, send headers or bodies a byte at a time, hold 10,000 idle
// keep-alive connections, pipeline requests, or send oversized headers. After
// each scenario the invariants: books to the micro, no hold left, the other
// clients served, the worker alive (same pid).
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import t, { type Test } from 'tap';
import { parseMoney } from '../../src/money/money.js';
import { organization, usageRows } from '../helpers/provision.js';
import { workerPids } from '../helpers/workers.js';
import { rss } from './lib/procs.js';
import { call } from './lib/load.js';
import { lastRequestId, rowOf, scenario, startRig } from './lib/rig.js';

const STALLED_CLIENT_MS = 2000;
const rig = await startRig(t, { env: { STALLED_CLIENT_MS: String(STALLED_CLIENT_MS) } });
if (rig !== null) {
  const { gw, sim } = rig;
  const worker = workerPids(gw.proc.pid!)[0];

  const open = (): Promise<Socket> =>
    new Promise((resolve, reject) => {
      const s = connect(gw.port, '127.0.0.1');
      s.once('connect', () => resolve(s));
      s.once('error', reject);
    });
  const closed = (s: Socket, timeoutMs: number): Promise<boolean> =>
    new Promise((resolve) => {
      if (s.destroyed) return resolve(true);
      const timer = setTimeout(() => resolve(false), timeoutMs);
      s.once('close', () => (clearTimeout(timer), resolve(true)));
    });
  const chatHead = (key: string, length: number): string =>
    `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;
  const chatBody = (content: string, stream = false): string => JSON.stringify({ model: 'nw-swift-1', stream, max_tokens: 2000, messages: [{ role: 'user', content }] });
  const sameWorker = (t: Test): void => void t.same(workerPids(gw.proc.pid!), [worker], 'the worker did not crash');

  t.test('a client that leaves during its upload: nothing charged, no hold', async (t) => {
    await scenario(t, rig, 'disconnect during upload', async () => {
      const { key, orgId } = await rig.org();
      for (let i = 0; i < 20; i++) {
        const s = await open();
        s.write(chatHead(key, 100_000) + '{"model":"nw-swift-1","messages":[{"role":"user","content":"' + 'x'.repeat(500 * i));
        await new Promise((r) => setTimeout(r, 5));
        s.destroy();
      }
      const org = await organization(gw.url, orgId);
      t.equal(org.balance, '10.00', 'nothing charged');
      sameWorker(t);
    });
  });

  t.test('clients that leave while their call is reserved or dispatched: settled, nothing left held', async (t) => {
    await scenario(t, rig, 'disconnect during reservation and dispatch', async () => {
      const { key } = await rig.org();
      const before = sim.requestCount();
      // Right after the request is written (reservation), and while the supplier has it but has not answered (dispatch).
      const sockets = await Promise.all(
        Array.from({ length: 30 }, async (_, i) => {
          const s = await open();
          s.on('error', () => {});
          const body = chatBody(i % 2 === 0 ? `leave early [sim:words=5]` : `leave in dispatch [sim:words=5] [sim:delay_ms=2000]`);
          s.write(chatHead(key, Buffer.byteLength(body)) + body);
          return { s, early: i % 2 === 0 };
        }),
      );
      for (const { s, early } of sockets) if (early) s.destroy();
      await new Promise((r) => setTimeout(r, 300));
      for (const { s } of sockets) s.destroy();
      t.ok(sim.requestCount() - before >= 15, 'the dispatched ones reached the supplier');
      sameWorker(t);
    });
  });

  t.test('clients that leave after the first byte, and at the last byte: settled for what was delivered', async (t) => {
    for (const when of ['after the first byte', 'at the last byte'] as const) {
      await scenario(t, rig, `disconnect ${when}`, async () => {
        const { key, orgId } = await rig.org();
        const s = await open();
        s.on('error', () => {});
        const body = chatBody(`leave [sim:words=${when === 'at the last byte' ? 20 : 500}] [sim:delay_ms=5]`, true);
        s.write(chatHead(key, Buffer.byteLength(body)) + body);
        let text = '';
        await new Promise<void>((resolve) => {
          s.on('data', (d: Buffer) => {
            text += d.toString();
            const done = when === 'after the first byte' ? text.includes('"content":"') : text.includes('"finish_reason":"');
            if (done) {
              s.destroy();
              resolve();
            }
          });
          s.on('close', () => resolve());
        });
        const row = await rowOf(rig, await lastRequestId(rig, orgId));
        if (when === 'after the first byte') t.equal(row.outcome, 'cancelled', 'settled cancelled');
        else t.ok(['completed', 'cancelled'].includes(row.outcome), `settled ${row.outcome}`);
        t.ok(row.output > 0 && row.charged > 0, `charged for the ${row.output} tokens produced`);
        sameWorker(t);
      });
    }
  });

  t.test('a slow reader gets the whole stream', async (t) => {
    await scenario(t, rig, 'slow reader', async () => {
      const { key, orgId } = await rig.org();
      const s = await open();
      const body = chatBody('slow reader [sim:words=400]', true);
      s.write(chatHead(key, Buffer.byteLength(body)) + body);
      let text = '';
      // Read a little, pause, read a little: below STALLED_CLIENT_MS every time.
      const reading = setInterval(() => (s.isPaused() ? s.resume() : s.pause()), 150);
      await new Promise<void>((resolve) => {
        s.on('data', (d: Buffer) => {
          text += d.toString();
          if (text.includes('data: [DONE]')) resolve();
        });
        s.on('close', () => resolve());
      });
      clearInterval(reading);
      s.destroy();
      t.ok(text.includes('data: [DONE]'), 'the stream ended with [DONE]');
      t.equal((await rowOf(rig, await lastRequestId(rig, orgId))).outcome, 'completed');
    });
  });

  t.test('slowloris: headers and bodies a byte at a time are cut, others served meanwhile', async (t) => {
    await scenario(t, rig, 'slowloris', async () => {
      const { key } = await rig.org();
      const sockets: Socket[] = [];
      const drips: NodeJS.Timeout[] = [];
      for (let i = 0; i < 100; i++) {
        const s = await open();
        s.on('error', () => {});
        sockets.push(s);
        const head = i % 2 === 0 ? 'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Slow: ' : chatHead(key, 100_000) + '{"model":';
        s.write(head);
        drips.push(setInterval(() => s.writable && s.write('a'), 1000));
      }
      const started = Date.now();
      const cut = await Promise.all(sockets.map((s) => closed(s, 20_000)));
      for (const d of drips) clearInterval(d);
      t.ok(cut.every(Boolean), `all 100 slow connections cut by the gateway (within ${Date.now() - started} ms)`);
      sameWorker(t);
    });
  });

  t.test('10,000 idle keep-alive connections: held, memory bounded, others served', async (t) => {
    // This process holds one descriptor per connection (the gateway's worker too, under the same limit).
    const limit = Number(/Max open files\s+(\d+)/.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1] ?? 1024);
    const N = Math.min(10_000, limit - 1000);
    if (N < 10_000) t.comment(`scaled down to ${N} connections: the open-files limit here is ${limit} (raise it with ulimit -n to run 10,000)`);
    await scenario(t, rig, `${N} idle keep-alive connections`, async () => {
      const { key } = await rig.org();
      const before = rss(worker);
      const sockets: Socket[] = [];
      let answered = 0;
      for (let i = 0; i < N; i += 500) {
        const batch = await Promise.all(Array.from({ length: Math.min(500, N - i) }, open));
        await Promise.all(
          batch.map(
            (s) =>
              new Promise<void>((resolve) => {
                s.on('error', () => resolve());
                s.once('data', () => (answered++, resolve()));
                s.write('GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n');
              }),
          ),
        );
        sockets.push(...batch);
      }
      t.equal(answered, N, `${N} connections each answered one request`);
      const r = await call(gw.url, key, 'chat', 'beside the crowd [sim:words=3]');
      t.equal(r.outcome, 'ok', 'a new client is served beside them');
      const grew = rss(worker) - before;
      t.ok(grew < 256 << 20, `worker RSS grew ${(grew / 1048576).toFixed(0)} MB for ${N} connections`);
      t.ok(sockets.filter((s) => !s.destroyed).length > N * 0.99, 'the idle connections stay open');
      for (const s of sockets) s.destroy();
      sameWorker(t);
    });
  });

  /** Writes `payload` at once and collects what comes back for up to `waitMs` (or until `count` status lines). */
  async function pipelined(payload: string, count: number, waitMs = 3000): Promise<string[]> {
    const s = await open();
    let text = '';
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, waitMs);
      s.on('data', (d: Buffer) => {
        text += d.toString();
        if ((text.match(/HTTP\/1\.1 \d{3}/g) ?? []).length >= count) setTimeout(() => (clearTimeout(timer), resolve()), 100);
      });
      s.write(payload);
    });
    s.destroy();
    return text.match(/HTTP\/1\.1 \d{3}/g) ?? [];
  }
  const GET = 'GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n';
  const NOT_FOUND = 'GET /v1/nothing-here HTTP/1.1\r\nHost: x\r\n\r\n';

  t.test('pipelined requests are answered in order', async (t) => {
    await scenario(t, rig, 'pipelined requests', async () => {
      const { key } = await rig.org();
      const body = chatBody('pipelined [sim:words=3]');
      t.same(await pipelined(GET + NOT_FOUND + GET, 3), ['HTTP/1.1 200', 'HTTP/1.1 404', 'HTTP/1.1 200'], 'three GETs in one write: three answers, in order');
      t.same(await pipelined(GET + chatHead(key, Buffer.byteLength(body)) + body, 2), ['HTTP/1.1 200', 'HTTP/1.1 200'], 'a GET then a model call: both answered');
      sameWorker(t);
    });
  });
  // uWebSockets.js closes a connection when a request is parsed behind a response still pending
  // (HTTP_RESPONSE_PENDING in HttpContext::onData; "async pipelining is not supported", upstream
  // uNetworking/uWebSockets.js#277 and #1301), and every model call answers asynchronously. The
  // promise is then: the connection closes at once (no wait for an idle timeout), the call is
  // cancelled (charged its input if it had reached the supplier) and nothing held, the worker unharmed. README "HTTP/1.1 pipelining".
  t.test('a request pipelined behind a model call: the connection closes at once, the call cancelled (charged at most its input), nothing held', async (t) => {
    await scenario(t, rig, 'pipelined behind a model call', async () => {
      const { key, orgId } = await rig.org();
      const body = chatBody('pipelined [sim:words=3]');
      const post = chatHead(key, Buffer.byteLength(body)) + body;
      for (const [name, payload] of [['POST then GET', post + GET], ['POST then POST', post + post]]) {
        const s = await open();
        s.on('error', () => {});
        let text = '';
        s.on('data', (d: Buffer) => (text += d.toString('latin1')));
        const started = performance.now();
        s.write(payload);
        const wasClosed = await closed(s, 2000);
        s.destroy();
        t.ok(wasClosed, `${name}: the connection closed after ${(performance.now() - started).toFixed(0)} ms`);
        t.equal(text, '', `${name}: no partial answer`);
      }
      // The call is cancelled: charged nothing if the close came before it reached the supplier, else its input
      // (docs/billing.md, "A cancelled call is charged its input"; from an allotment it is dispatched in the same turn).
      const rows = await usageRows(gw.url, orgId);
      t.ok(rows.every((r) => r.outcome === 'cancelled' && r.output_tokens === 0), `every call cancelled, no output charged (${rows.map((r) => `${r.outcome} ${r.charged}`).join(', ')})`);
      const org = await organization(gw.url, orgId);
      t.equal(parseMoney(org.balance), parseMoney('10.00')! - rows.reduce((sum, r) => sum + parseMoney(r.charged)!, 0), 'charged what the rows say, nothing more');
      t.equal(org.held, '0.00', 'nothing held');
      sameWorker(t);
    });
  });

  t.test('oversized headers: refused or cut, the worker unharmed', async (t) => {
    await scenario(t, rig, 'oversized headers', async () => {
      const { key } = await rig.org();
      for (const size of [16 << 10, 64 << 10, 1 << 20]) {
        const s = await open();
        s.on('error', () => {});
        let text = '';
        s.on('data', (d: Buffer) => (text += d.toString('latin1')));
        s.write(`GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nX-Big: ${'a'.repeat(size)}\r\n\r\n`);
        await closed(s, 1500);
        s.destroy();
        t.ok(text === '' || /^HTTP\/1\.1 (4\d\d|200)/.test(text), `${size} bytes of headers: ${text === '' ? 'connection closed' : text.slice(0, 12)}`);
      }
      sameWorker(t);
    });
  });
}
