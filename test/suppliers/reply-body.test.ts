// One attempt at a supplier through undici's dispatch (suppliers/reply-body.ts,
// SupplierConnections.send), against a real HTTP server: a reply read whole
// keeps its connection; one past the bound, one left early and an aborted call
// drop theirs; a reader that falls behind pauses the supplier; a dropped body
// is read out so the connection is kept.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import t from 'tap';
import { CallAbort, CallAborted } from '../../src/suppliers/abort.js';
import { SupplierConnections } from '../../src/suppliers/connections.js';
import { ReplyTooLarge } from '../../src/suppliers/reply-limits.js';
import type { Target } from '../../src/suppliers/targets.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;
const routes = new Map<string, Handler>();
const sockets = new Set<Socket>();
const closed: Socket[] = [];
const server = createServer((req, res) => req.resume().on('end', () => routes.get(req.url!)!(req, res)));
server.on('connection', (s: Socket) => {
  sockets.add(s);
  s.on('close', () => closed.push(s));
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
const connections = new SupplierConnections({ connectTimeoutMs: 2000, headersTimeoutMs: 5000, bodyTimeoutMs: 5000, connectionsPerOrigin: 1 });
t.teardown(async () => {
  await connections.close();
  for (const s of sockets) s.destroy();
  server.close();
});

function target(path: string): Target {
  return { protocol: 'chat_completions', origin, path, headers: { 'content-type': 'application/json' } };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function until(what: string, ok: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !ok(); i++) await sleep(20);
  if (!ok()) throw new Error(`timed out waiting for: ${what}`);
}

/** Writes `total` bytes in 64 KiB chunks as fast as the socket takes them; `written` counts what the socket accepted. */
function flood(res: ServerResponse, total: number, progress: { written: number; finished: boolean }): void {
  res.writeHead(res.statusCode, { 'content-type': 'text/event-stream' });
  const chunk = Buffer.alloc(65536, 0x61);
  const more = (): void => {
    while (progress.written < total) {
      progress.written += chunk.length;
      if (!res.write(chunk)) return void res.once('drain', more);
    }
    progress.finished = true;
    res.end();
  };
  res.on('close', () => res.removeAllListeners('drain'));
  more();
}

routes.set('/small', (_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end('{"ok":true,"text":"héllo"}');
});
routes.set('/error', (_req, res) => {
  res.writeHead(503, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: 'x'.repeat(20_000) }));
});
routes.set('/slow', (_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.write('{"partial":');
  setTimeout(() => res.end('1}'), 2000).unref();
});
routes.set('/silent', () => {});

t.test('a reply read whole: its head, its bytes, and the connection kept for the next attempt', async (t) => {
  const opened = sockets.size;
  for (let i = 0; i < 3; i++) {
    const head = await connections.send(target('/small'), '{}', new CallAbort());
    t.equal(head.statusCode, 200);
    t.equal(head.contentType, 'application/json');
    const bytes = await head.body.readAll(1 << 20);
    t.equal(Buffer.concat(bytes.blocks).toString('utf8'), '{"ok":true,"text":"héllo"}');
  }
  t.equal(sockets.size - opened, opened === 0 ? 1 : 0, 'one connection for all three');
});

t.test('a refusal dumped: read out, the connection kept', async (t) => {
  const before = closed.length;
  const head = await connections.send(target('/error'), '{}', new CallAbort());
  t.equal(head.statusCode, 503);
  await head.body.dump();
  const next = await connections.send(target('/small'), '{}', new CallAbort());
  await next.body.readAll(1 << 20);
  t.equal(closed.length, before, 'no connection closed');
});

t.test('a reply past the bound: ReplyTooLarge, and the connection dropped', async (t) => {
  const progress = { written: 0, finished: false };
  routes.set('/big', (_req, res) => flood(res, 64 << 20, progress));
  const before = closed.length;
  const head = await connections.send(target('/big'), '{}', new CallAbort());
  await t.rejects(head.body.readAll(1 << 20), new ReplyTooLarge(1 << 20));
  await until('the server sees the connection closed', () => closed.length > before);
  t.notOk(progress.finished, `the server stopped after ${progress.written} bytes`);
});

t.test('a reader that falls behind pauses the supplier; every byte arrives, in order', async (t) => {
  const total = 48 << 20;
  const progress = { written: 0, finished: false };
  routes.set('/stream', (_req, res) => flood(res, total, progress));
  const head = await connections.send(target('/stream'), '{}', new CallAbort());
  let read = 0;
  let writtenWhileAsleep = -1;
  let writtenBeforeWaking = -1;
  for await (const chunk of head.body) {
    if (read === 0) {
      await sleep(300);
      const at = progress.written;
      await sleep(300);
      writtenWhileAsleep = progress.written - at;
      writtenBeforeWaking = progress.written;
    }
    if (chunk.some((b) => b !== 0x61)) t.fail('a byte changed');
    read += chunk.length;
  }
  t.equal(read, total, 'every byte');
  // Kernel buffers take a few MB; without the pause undici would read the whole 48 MB meanwhile.
  t.ok(writtenBeforeWaking < total / 4, `the supplier wrote ${writtenBeforeWaking} of ${total} bytes before the reader woke`);
  t.equal(writtenWhileAsleep, 0, 'nothing more was written while the reader slept');
  t.ok(progress.finished);
});

t.test('leaving a stream early drops its connection', async (t) => {
  const progress = { written: 0, finished: false };
  routes.set('/left', (_req, res) => flood(res, 64 << 20, progress));
  const before = closed.length;
  const head = await connections.send(target('/left'), '{}', new CallAbort());
  for await (const _chunk of head.body) break;
  await until('the server sees the connection closed', () => closed.length > before);
  t.notOk(progress.finished);
});

t.test('a call aborted before the head: the attempt rejects with CallAborted, the connection goes', async (t) => {
  const before = closed.length;
  const abort = new CallAbort();
  const head = connections.send(target('/silent'), '{}', abort);
  await sleep(100);
  abort.abort();
  await t.rejects(head, CallAborted);
  await until('the server sees the connection closed', () => closed.length > before);
});

t.test('a call aborted while its body is read: readAll rejects with CallAborted', async (t) => {
  const abort = new CallAbort();
  const head = await connections.send(target('/slow'), '{}', abort);
  setTimeout(() => abort.abort(), 100);
  const started = performance.now();
  await t.rejects(head.body.readAll(1 << 20), CallAborted);
  t.ok(performance.now() - started < 1000, 'at the abort, not at the end of the body');
});

t.test('a call aborted before it was sent is never sent', async (t) => {
  const abort = new CallAbort();
  abort.abort();
  let served = 0;
  routes.set('/never', (_req, res) => {
    served++;
    res.end('{}');
  });
  await t.rejects(connections.send(target('/never'), '{}', abort), CallAborted);
  await sleep(100);
  t.equal(served, 0);
});

t.test('a refusal with a body past what a dump reads out: the dump ends, the connection goes', async (t) => {
  const progress = { written: 0, finished: false };
  routes.set('/huge-error', (_req, res) => {
    res.statusCode = 500;
    flood(res, 64 << 20, progress);
  });
  const before = closed.length;
  const head = await connections.send(target('/huge-error'), '{}', new CallAbort());
  t.equal(head.statusCode, 500);
  await head.body.dump();
  await until('the server sees the connection closed', () => closed.length > before);
  t.notOk(progress.finished, `the server stopped after ${progress.written} bytes`);
});

t.test('a call with an earlier attempt finished: its abort reaches the attempt in progress', async (t) => {
  const abort = new CallAbort();
  const first = await connections.send(target('/small'), '{}', abort);
  await first.body.readAll(1 << 20);
  const second = await connections.send(target('/slow'), '{}', abort);
  const reading = second.body.readAll(1 << 20);
  abort.abort();
  await t.rejects(reading, CallAborted, 'the attempt in progress is aborted');
});
