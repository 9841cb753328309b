// Where offloading a model-call body to the worker-thread pool pays: the
// main thread's time per request, inline (JSON.parse + validate + serialize
// once) against a pool hop (transfer the bytes, await the prepared result),
// for chat bodies of growing size. Main-thread time through the pool is read
// from event-loop utilization, which counts only this thread.
// Run: npm run build && node dist/bench/micro/prepare.js
import { performance } from 'node:perf_hooks';
import { OffloadPool } from '../../src/offload/pool.js';
import { chatCodec } from '../../src/surfaces/chat/codec.js';

function body(bytes: number): Buffer {
  const turns = Math.max(2, Math.round(bytes / 2000));
  const per = Math.floor(bytes / turns);
  const messages = Array.from({ length: turns }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: 'lorem ipsum '.repeat(per / 12) }));
  return Buffer.from(JSON.stringify({ model: 'nw-swift-1', messages, max_tokens: 256 }));
}

function inlineMicros(raw: Buffer, n: number): number {
  const start = performance.now();
  for (let i = 0; i < n; i++) chatCodec.prepare(JSON.parse(raw.toString('utf8')), raw.length);
  return ((performance.now() - start) * 1000) / n;
}

async function pooledMicros(pool: OffloadPool, raw: Buffer, n: number, inFlight: number): Promise<number> {
  const elu0 = performance.eventLoopUtilization();
  let next = 0;
  const lane = async () => {
    while (next++ < n) {
      const copy = Buffer.allocUnsafeSlow(raw.length);
      raw.copy(copy);
      await pool.prepare('chat_completions', copy);
    }
  };
  // The copy stands in for the request body uWS hands over; it is made inline in both cases, so subtract it.
  const copyStart = performance.now();
  for (let i = 0; i < 200; i++) raw.copy(Buffer.allocUnsafeSlow(raw.length));
  const copyMicros = ((performance.now() - copyStart) * 1000) / 200;
  await Promise.all(Array.from({ length: inFlight }, lane));
  const elu = performance.eventLoopUtilization(elu0);
  return (elu.active * 1000) / n - copyMicros;
}

const pool = new OffloadPool(1, 1, 64);
await pooledMicros(pool, body(1024), 200, 4); // start the thread
console.log('body bytes | inline µs (main thread) | pool µs (main thread) | pays?');
for (const size of [2_048, 8_192, 16_384, 32_768, 65_536, 131_072, 524_288]) {
  const raw = body(size);
  const n = size > 100_000 ? 300 : 2000;
  inlineMicros(raw, 200);
  const inline = inlineMicros(raw, n);
  const pooled = await pooledMicros(pool, raw, n, 4);
  console.log(`${String(raw.length).padStart(10)} | ${inline.toFixed(1).padStart(22)} | ${pooled.toFixed(1).padStart(21)} | ${pooled < inline ? 'yes' : 'no'}`);
}
await pool.close();
