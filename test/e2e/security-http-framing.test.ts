// Issue 30 items 8 and 11: how the gateway frames requests on a raw socket.
// Item 8: with two Content-Length headers uWebSockets.js read the body by the
// first and served what followed as a second request (request smuggling).
// Item 11: uWebSockets.js 20.30 never answers an HTTP/1.0 request or one with
// 49 or more header fields (README, "HTTP/1.1 pipelining"); this pins what
// happens instead: nothing is answered, the connection is closed by uWS's
// 10 s timeout, nothing is held, and the worker serves others meanwhile.
import t from 'tap';
import { startGateway } from '../helpers/gateway.js';
import { workerPids } from '../helpers/workers.js';
import { converse, head, rssBytes } from './security-http-raw.js';

const gw = await startGateway();
t.teardown(() => gw.stop());
const workersAtStart = workerPids(gw.proc.pid!);

async function healthzMs(): Promise<number> {
  const started = performance.now();
  const res = await fetch(`${gw.url}/healthz`);
  if (res.status !== 200) throw new Error(`healthz answered ${res.status}`);
  await res.text();
  return performance.now() - started;
}

t.test('issue 30 item 8: two Content-Length headers', async (t) => {
  const smuggled = 'GET /x HTTP/1.1\r\nHost: gw\r\n\r\n';
  const body = '{}' + smuggled;
  const twoLengths = head('POST /v1/chat/completions HTTP/1.1', [['Host', 'gw'], ['Content-Type', 'application/json'], ['Content-Length', 2], ['Content-Length', body.length]]);

  // The request in one write: what follows the first length's body is never served.
  const oneWrite = await converse(gw.port, [twoLengths + body], 3000);
  t.notOk(oneWrite.statuses.includes(404), `the smuggled GET /x is not answered (got ${JSON.stringify(oneWrite.statuses)})`);
  t.ok(oneWrite.statuses.length <= 1 && oneWrite.statuses.every((s) => s === 400), 'at most the one 400');
  t.ok(oneWrite.closedMs !== null && oneWrite.closedMs < 1000, `the connection is closed at once (${oneWrite.closedMs?.toFixed(0)} ms)`);

  // The smuggled request a moment later, on the same connection.
  const twoWrites = await converse(gw.port, [twoLengths + '{}', { pauseMs: 200 }, smuggled], 3000);
  t.same(twoWrites.statuses, [400], 'a single 400, and no second response');
  t.equal(twoWrites.headers.connection, 'close', 'with Connection: close');
  t.match(twoWrites.text, /"content-length"/, 'naming the header');
  t.ok(twoWrites.closedMs !== null && twoWrites.closedMs < 1000, `and the connection closed (${twoWrites.closedMs?.toFixed(0)} ms)`);

  // The same value twice is refused too, on any route (before any key or path is looked at).
  const same = await converse(gw.port, [head('POST /console/v1/sessions HTTP/1.1', [['Host', 'gw'], ['Content-Type', 'application/json'], ['Content-Length', 2], ['Content-Length', 2]]) + '{}'], 3000);
  t.same(same.statuses, [400], 'the same length twice: 400');
  const get = await converse(gw.port, [head('GET /v1/models HTTP/1.1', [['Host', 'gw'], ['content-length', 0], ['Content-Length', 0]])], 3000);
  t.same(get.statuses, [400], 'on a GET too');

  // One Content-Length, and requests pipelined behind an answered one, are served as before.
  const normal = await converse(gw.port, [head('GET /healthz HTTP/1.1', [['Host', 'gw']]) + head('GET /healthz HTTP/1.1', [['Host', 'gw'], ['Connection', 'close']])], 3000);
  t.same(normal.statuses, [200, 200], 'two pipelined GETs: both answered');
  t.same(workerPids(gw.proc.pid!), workersAtStart, 'the worker never restarted');
});

t.test('issue 30 item 11: HTTP/1.0 and 49 header fields are never answered, and hold nothing', async (t) => {
  const fields = (n: number): Array<[string, string]> => [['Host', 'gw'], ...Array.from({ length: n - 1 }, (_, i): [string, string] => [`X-Field-${i}`, 'v'])];
  // The most uWS 20.30 parses (its MAX_HEADERS of 50 holds the request line, 48 fields and an end marker).
  const most = await converse(gw.port, [head('GET /healthz HTTP/1.1', [...fields(47), ['Connection', 'close']])], 3000);
  t.same(most.statuses, [200], '48 header fields: answered');

  const worker = workerPids(gw.proc.pid!)[0]!;
  const rssBefore = rssBytes(worker);
  const held = 200;
  const pending = [
    ...Array.from({ length: held / 2 }, () => converse(gw.port, [head('GET /healthz HTTP/1.0', [['Host', 'gw']])], 15_000)),
    ...Array.from({ length: held / 2 }, () => converse(gw.port, [head('GET /healthz HTTP/1.1', fields(49))], 15_000)),
  ];
  // While they wait, the worker serves everyone else at once.
  await new Promise((r) => setTimeout(r, 1000));
  const others = [await healthzMs(), await healthzMs(), await healthzMs()];
  t.ok(Math.max(...others) < 1000, `others are served meanwhile (${others.map((m) => m.toFixed(0)).join(', ')} ms)`);
  const grownMb = (rssBytes(worker) - rssBefore) / 2 ** 20;
  t.ok(grownMb < 16, `${held} such connections held cost ${grownMb.toFixed(1)} MB of worker RSS`);

  const answers = await Promise.all(pending);
  t.equal(answers.filter((a) => a.text.length > 0).length, 0, 'none is answered (not even an error: uWS has no handler to call)');
  const closed = answers.map((a) => a.closedMs).filter((ms): ms is number => ms !== null);
  t.equal(closed.length, held, 'every one is closed by the gateway');
  // uWS 20.30's HTTP_IDLE_TIMEOUT_S: a request it cannot parse waits for more bytes until then.
  const slowest = Math.max(...closed);
  t.ok(slowest < 13_000, `closed within uWS's 10 s idle timeout (${(Math.min(...closed) / 1000).toFixed(1)}–${(slowest / 1000).toFixed(1)} s)`);

  // A client that keeps sending fills uWS's 4 KB buffer for an unparsed head: closed then, without waiting.
  const chatty = await converse(gw.port, [head('GET /healthz HTTP/1.0', [['Host', 'gw'], ['X-Pad', 'p'.repeat(5000)]])], 5000);
  t.ok(chatty.closedMs !== null && chatty.closedMs < 1000, `an HTTP/1.0 head over 4 KB is closed at once (${chatty.closedMs?.toFixed(0)} ms)`);

  t.ok((await healthzMs()) < 1000, 'a normal request after them succeeds');
  t.same(workerPids(gw.proc.pid!), workersAtStart, 'the worker never restarted');
});
