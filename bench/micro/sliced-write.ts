// What writing a large answer costs the event loop per task (issue 33 item 2):
// a real uWS listener answers a 2.8 MB JSON answer in parts
// (server/respond.ts, sendJsonParts), as a 128 × 3072 embeddings answer is,
// to a client reading it in another thread; every tryEnd is timed. Slices of
// WRITE_SLICE_BYTES against one slice per part (the write before issue 33).
// Reported: the longest single write (the longest task it makes), writes and
// ms in writes per answer. Wall time on this thread: a busy machine lengthens it.
//   node dist/bench/micro/sliced-write.js [answers]
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import type { RequestContext } from '../../src/server/context.js';
import { sendJsonParts, WRITE_SLICE_BYTES } from '../../src/server/respond.js';
import { App, closeListenSocket, listenSocketPort, type HttpResponse, type ListenSocket } from '../../src/server/uws.js';

const ANSWERS = Number(process.argv[2] ?? 40);
/** The data bytes of a 128 × 3072 base64 embeddings answer. */
const DATA = Buffer.alloc(2_800_000, 0x41);

let slice = WRITE_SLICE_BYTES;
let writes: number[] = [];

function timed(res: HttpResponse): HttpResponse {
  const tryEnd = res.tryEnd.bind(res);
  // The response as sendJsonParts uses it, its tryEnd timed.
  return new Proxy(res, {
    get(target, prop) {
      if (prop === 'tryEnd') {
        return (chunk: Uint8Array, total: number) => {
          const t0 = performance.now();
          const r = tryEnd(chunk, total);
          writes.push(performance.now() - t0);
          return r;
        };
      }
      const v = Reflect.get(target, prop) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

const app = App();
app.get('/*', (res) => {
  const ctx = { aborted: false, responded: false, status: 0, res: timed(res), requestId: 'r', route: { envelope: 'rest' }, finish() {} } as unknown as RequestContext;
  res.onAborted(() => {
    ctx.aborted = true;
  });
  sendJsonParts(ctx, 200, ['{"object":"list","data":', DATA, ',"model":"m","usage":{"prompt_tokens":1,"total_tokens":1}}'], slice);
});
const listening = await new Promise<ListenSocket>((resolve, reject) => void app.listen('127.0.0.1', 0, (s) => (s ? resolve(s) : reject(new Error('no port')))));
const port = listenSocketPort(listening);

/** A client on another thread: `n` answers, one at a time, each read whole. */
function client(n: number): Promise<void> {
  const code = `const { workerData, parentPort } = require('node:worker_threads');
    (async () => { for (let i = 0; i < workerData.n; i++) { const r = await fetch(workerData.url); await r.arrayBuffer(); } parentPort.postMessage('done'); })();`;
  const w = new Worker(code, { eval: true, workerData: { n, url: `http://127.0.0.1:${port}/` } });
  return new Promise((resolve, reject) => {
    w.once('message', () => void w.terminate().then(() => resolve()));
    w.once('error', reject);
  });
}

const rows: string[] = [];
for (const [label, bytes] of [['one write per part (before)', Infinity], [`slices of ${WRITE_SLICE_BYTES / 1024} KB`, WRITE_SLICE_BYTES]] as const) {
  slice = bytes;
  await client(5);
  writes = [];
  await client(ANSWERS);
  const sorted = [...writes].sort((a, b) => a - b);
  const total = writes.reduce((a, b) => a + b, 0);
  rows.push(`| ${label} | ${sorted[sorted.length - 1]!.toFixed(2)} | ${sorted[Math.floor(sorted.length * 0.99)]!.toFixed(2)} | ${(writes.length / ANSWERS).toFixed(1)} | ${(total / ANSWERS).toFixed(2)} |`);
}
console.log(`${ANSWERS} answers of ${(DATA.byteLength / 1e6).toFixed(1)} MB each\n\n| write | longest write (ms) | p99 write (ms) | writes per answer | ms in writes per answer |\n| --- | ---: | ---: | ---: | ---: |\n${rows.join('\n')}`);
closeListenSocket(listening);
