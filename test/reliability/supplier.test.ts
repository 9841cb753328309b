// Reliability, supplier side (issue 17): every way a supplier can fail, with
// the fault supplier (test/reliability/lib/fault-supplier.ts) between the
// gateway and the simulator. Before the first byte: failover to the next
// route. After it: the surface's in-stream error. Every call settled (a usage
// row with its outcome, no hold left), the circuit opening and closing, and
// after each scenario the invariants (books to the micro, no hold, other
// clients served).
import t from 'tap';
import { organization } from '../helpers/provision.js';
import { workerPids } from '../helpers/workers.js';
import { call, type Surface } from './lib/load.js';
import { assertBooks, lastRequestId, rowOf, scenario, startRig } from './lib/rig.js';

const TIMEOUT_MS = 1200;
const rig = await startRig(t, {
  config: { suppliers: { connect_timeout_ms: TIMEOUT_MS, headers_timeout_ms: TIMEOUT_MS, body_timeout_ms: TIMEOUT_MS, breaker_threshold: 3, breaker_cooldown_ms: 2000 } },
});
if (rig !== null) {
  const { gw, sim, faults } = rig;

  /** A successful call on alpha: closes its circuit's failure count, so scenarios do not add up to an open circuit. */
  const healAlpha = async (key: string): Promise<void> => void (await call(gw.url, key, 'chat', 'heal [sim:words=2]'));

  t.test('before the first byte: failover to the next route, the call answered and billed once', async (t) => {
    const faultsBeforeFirstByte = ['[fault:hang@alpha]', '[fault:reset=0@alpha]', '[sim:status=503@alpha]', '[sim:status=429@alpha]', '[sim:status=500@alpha]'];
    for (const fault of faultsBeforeFirstByte) {
      for (const surface of ['chat', 'chat-stream'] as Surface[]) {
        await scenario(t, rig, `${fault} ${surface}`, async () => {
          const { key, orgId } = await rig.org();
          const beta = sim.requestCount('beta');
          const r = await call(gw.url, key, surface, `failover ${fault} [sim:words=5]`);
          t.equal(r.outcome, 'ok', `${fault} ${surface}: answered (${r.status} ${r.fault ?? ''})`);
          t.ok(sim.requestCount('beta') > beta, `${fault} ${surface}: beta was tried`);
          const row = await rowOf(rig, r.requestId);
          t.equal(row.supplier, 'sim-beta', `${fault} ${surface}: billed as served by beta`);
          t.equal(row.outcome, 'completed');
          t.equal((await organization(gw.url, orgId)).held, '0.00');
          await healAlpha(key);
        });
      }
    }
  });

  // A 200 whose body is unusable before anything was sent on (pipeline/run.ts answerWithFailover):
  // unary replies are read whole first; a stream is given up before its first frame goes out.
  // nw-swift-1's chat has two routes (alpha, then beta).
  const brokenTwoHundreds: Array<[string, Surface]> = [
    ['[fault:badjson@alpha]', 'chat-stream'],
    ['[fault:stall=0@alpha]', 'chat-stream'],
    // A 200 that is not an event stream, to a stream request: its body let go unread (once crashed the worker).
    ['[fault:notjson@alpha]', 'chat-stream'],
    ['[fault:notjson@alpha]', 'chat'],
    ['[fault:errorbody@alpha]', 'chat'],
  ];
  t.test('a 200 with a broken body before the first byte fails over to the next route, billed once', async (t) => {
    const workers = workerPids(gw.proc.pid!);
    for (const [fault, surface] of brokenTwoHundreds) {
      await scenario(t, rig, `${fault} ${surface}`, async () => {
        const { key, orgId } = await rig.org();
        const beta = sim.requestCount('beta');
        const r = await call(gw.url, key, surface, `broken ${fault} [sim:words=5]`);
        t.equal(r.outcome, 'ok', `${fault} ${surface}: answered (${r.status} ${r.fault ?? ''})`);
        t.ok(sim.requestCount('beta') > beta, `${fault} ${surface}: beta was tried`);
        const row = await rowOf(rig, r.requestId);
        t.same([row.supplier, row.outcome], ['sim-beta', 'completed'], `${fault} ${surface}: billed once, as served by beta`);
        t.equal((await organization(gw.url, orgId)).held, '0.00');
        t.same(workerPids(gw.proc.pid!), workers, `${fault} ${surface}: the worker did not crash`);
        await healAlpha(key);
      });
    }
  });

  // A model with one route for the protocol (nw-swift-1's responses on alpha, ks-quill-1's messages on gamma): no route left.
  const brokenSoleRoute: Array<[string, Surface]> = [
    ['[fault:badjson@alpha]', 'responses-stream'],
    ['[fault:badjson@gamma]', 'messages-stream'],
  ];
  t.test('a broken 200 on the only route: refused in the envelope before any frame, nothing charged', async (t) => {
    for (const [fault, surface] of brokenSoleRoute) {
      await scenario(t, rig, `${fault} ${surface}`, async () => {
        const { key, orgId } = await rig.org();
        const r = await call(gw.url, key, surface, `broken ${fault} [sim:words=5]`);
        t.same([r.outcome, r.status], ['refused-5xx', 502], `${fault} ${surface}: a 502 in the envelope (${r.fault ?? ''})`);
        const row = await rowOf(rig, r.requestId);
        t.same([row.outcome, row.charged], ['failed', 0], 'settled failed, nothing charged');
        t.equal((await organization(gw.url, orgId)).held, '0.00');
      });
    }
  });

  // Embeddings and images replies are received and decoded by a pool thread (surface.fetchInPool, workers/fetch-reply.ts):
  // the same outcomes as a reply read on the event loop. nw-embed-1 is served by alpha only, au-canvas-1 by beta only.
  const brokenInThread: Array<[string, Surface]> = [
    ['[fault:notjson@alpha]', 'embeddings'],
    ['[fault:errorbody@beta]', 'images'],
    ['[fault:stall=0@alpha]', 'embeddings'],
    ['[fault:reset=0@beta]', 'images'],
    ['[fault:hang@alpha]', 'embeddings'],
  ];
  t.test('a reply a pool thread reads, broken or stalled: a 5xx in the envelope, nothing charged, no worker lost', async (t) => {
    const workers = workerPids(gw.proc.pid!);
    for (const [fault, surface] of brokenInThread) {
      await scenario(t, rig, `${fault} ${surface}`, async () => {
        const { key, orgId } = await rig.org();
        const started = performance.now();
        const r = await call(gw.url, key, surface, `broken ${fault}`);
        t.equal(r.outcome, 'refused-5xx', `${fault} ${surface}: a 5xx in the envelope (${r.status} ${r.fault ?? ''})`);
        t.ok(performance.now() - started < TIMEOUT_MS * 4, `${fault} ${surface}: given up within the supplier timeouts`);
        const row = await rowOf(rig, r.requestId);
        t.same([row.outcome, row.charged], ['failed', 0], `${fault} ${surface}: settled failed, nothing charged`);
        t.equal((await organization(gw.url, orgId)).held, '0.00');
        t.same(workerPids(gw.proc.pid!), workers, `${fault} ${surface}: the worker did not crash`);
      });
    }
  });

  t.test('after the first byte: the surface’s in-stream error, the call billed for what was delivered', async (t) => {
    const cases: Array<[Surface, string]> = [
      ['chat-stream', '[fault:stall=4]'],
      ['chat-stream', '[fault:reset=4]'],
      // The reader hands on an event the body ended in without its blank line (src/suppliers/sse-reader.ts flush): a content event, so after the first byte.
      ['chat-stream', '[fault:nonewline]'],
      ['messages-stream', '[fault:stall=5]'],
      ['messages-stream', '[fault:reset=5]'],
      ['responses-stream', '[fault:stall=5]'],
      ['responses-stream', '[fault:reset=5]'],
    ];
    for (const [surface, fault] of cases) {
      await scenario(t, rig, `${fault} ${surface}`, async () => {
        const { key, orgId } = await rig.org();
        const started = performance.now();
        const r = await call(gw.url, key, surface, `midstream ${fault} [sim:words=40]`);
        // Chat ends a failed stream without [DONE] (the connection closed); messages with an error event; responses with response.failed.
        t.ok(['stream-error', 'cut'].includes(r.outcome) && (surface === 'chat-stream' || r.outcome === 'stream-error'), `${fault} ${surface}: ends as the spec says (${r.outcome} ${r.fault ?? ''})`);
        if (fault.includes('stall')) t.ok(performance.now() - started < TIMEOUT_MS * 4, 'given up after body_timeout_ms');
        const row = await rowOf(rig, r.requestId ?? (await lastRequestId(rig, orgId)));
        t.equal(row.outcome, 'incomplete', `${fault} ${surface}: settled as incomplete`);
        await healAlpha(key);
      });
    }
  });

  t.test('a stream with an unknown event type goes on', async (t) => {
    for (const surface of ['chat-stream', 'messages-stream', 'responses-stream'] as Surface[]) {
      await scenario(t, rig, `[fault:unknown] ${surface}`, async () => {
        const { key } = await rig.org();
        const r = await call(gw.url, key, surface, 'surprise [fault:unknown] [sim:words=5]');
        t.equal(r.outcome, 'ok', `${surface}: answered (${r.status} ${r.fault ?? ''})`);
        t.equal((await rowOf(rig, r.requestId)).outcome, 'completed');
      });
    }
  });

  t.test('429 and 5xx storms: every call refused in its envelope, nothing charged, no hold left', async (t) => {
    for (const status of [429, 500, 503]) {
      await scenario(
        t,
        rig,
        `${status} storm`,
        async () => {
          const { key } = await rig.org('10.00');
          const surfaces: Surface[] = ['chat', 'chat-stream', 'messages', 'messages-stream', 'responses', 'embeddings', 'images'];
          const results = await Promise.all(Array.from({ length: 28 }, (_, i) => call(gw.url, key, surfaces[i % surfaces.length], `storm [sim:status=${status}]`)));
          for (const r of results) rig.report.count(r);
          const wrong = results.filter((r) => r.outcome !== 'refused-5xx' && r.outcome !== 'refused-4xx');
          t.same(wrong, [], `${status} storm: all ${results.length} refused in their surface's envelope`);
          const rows = await Promise.all(results.map((r) => rowOf(rig, r.requestId).catch(() => null)));
          t.same(results.filter((_, i) => rows[i] === null).map((r) => `${r.surface} ${r.status}`), [], `${status} storm: every call has its usage row`);
          t.ok(rows.every((row) => row === null || (row.outcome === 'failed' && row.charged === 0)), `${status} storm: every call settled failed, nothing charged`);
        },
        { surfaces: ['count_tokens'] },
      );
    }
  });

  t.test('a supplier slower than the client waits: the client leaves, the call settles cancelled', async (t) => {
    // Embeddings and images: the abort crosses to the pool thread that holds the supplier request (offload/pool.ts fetchReply).
    for (const surface of ['chat', 'chat-stream', 'messages-stream', 'embeddings', 'images'] as Surface[]) {
      await scenario(t, rig, `slower than the client ${surface}`, async () => {
        const { key, orgId } = await rig.org();
        const ac = new AbortController();
        setTimeout(() => ac.abort(), 600);
        const unary = !surface.endsWith('-stream');
        const r = await call(gw.url, key, surface, `slow [sim:words=30] [sim:delay_ms=${unary ? 3000 : 200}]`, undefined, ac.signal);
        t.equal(r.outcome, 'cut', `${surface}: the client gave up`);
        const row = await rowOf(rig, await lastRequestId(rig, orgId));
        t.equal(row.outcome, 'cancelled', `${surface}: settled cancelled`);
        if (unary) t.ok(Number(row.total_ms) < 2500, `${surface}: settled when the client left (${row.total_ms} ms), not when the supplier answered`);
      });
    }
  });

  t.test('the circuit opens after breaker_threshold failures and closes after the cool-down', async (t) => {
    await scenario(
      t,
      rig,
      'circuit',
      async () => {
        const { key } = await rig.org();
        for (let i = 0; i < 3; i++) t.equal((await call(gw.url, key, 'chat', 'trip [sim:status=503@alpha] [sim:words=2]')).outcome, 'ok', 'failed over');
        await gw.waitForLog((l) => String(l.msg).startsWith('supplier circuit opened'), 2000);
        const alpha = sim.requestCount('alpha');
        t.equal((await call(gw.url, key, 'chat', 'open [sim:words=2]')).outcome, 'ok');
        t.equal(sim.requestCount('alpha'), alpha, 'while open, alpha is not tried');
        await new Promise((r) => setTimeout(r, 2100));
        t.equal((await call(gw.url, key, 'chat', 'trial [sim:words=2]')).outcome, 'ok');
        t.equal(sim.requestCount('alpha'), alpha + 1, 'after the cool-down, alpha is tried again');
        await gw.waitForLog((l) => l.msg === 'supplier circuit closed', 2000);
      },
      { surfaces: ['messages', 'count_tokens'] },
    );
  });

  t.test('whole supplier unreachable: connection refused, then connections that time out', async (t) => {
    for (const mode of ['refuse', 'blackhole'] as const) {
      await scenario(
        t,
        rig,
        `connect ${mode}`,
        async () => {
          const { key } = await rig.org('10.00');
          await faults[mode]();
          try {
            for (const surface of ['chat', 'chat-stream', 'messages', 'embeddings', 'images'] as Surface[]) {
              const r = await call(gw.url, key, surface, 'unreachable [sim:words=3]');
              rig.report.count(r);
              t.equal(r.outcome, 'refused-5xx', `${mode} ${surface}: a 5xx in the surface's envelope (${r.status} ${r.fault ?? ''})`);
              const row = await rowOf(rig, r.requestId);
              t.equal(row.outcome, 'failed');
              t.equal(row.charged, 0);
            }
          } finally {
            await faults.restore();
          }
          // Back: the circuits the refusals may have opened close after their cool-down.
          await new Promise((r) => setTimeout(r, 2100));
          t.equal((await call(gw.url, key, 'chat', 'back [sim:words=3]')).outcome, 'ok', 'served again once the supplier is back');
        },
        { surfaces: ['count_tokens'] },
      );
    }
  });

  t.test('the books after the whole file', async (t) => assertBooks(t, rig, 'supplier side'));
}
