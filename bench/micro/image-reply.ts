// Where decoding an images reply in the worker-thread pool pays: the main
// thread's time per reply inline (JSON.parse + decodeReply + render, as
// pipeline/answer-unary.ts does at or below REPLY_POOL_BYTES) against a pool
// hop (move the bytes to a thread, await the `data` text, render), for
// supplier replies of n base64 images of growing size. Main-thread time
// through the pool is read from event-loop utilization, which counts only
// this thread. Checks REPLY_POOL_BYTES (src/surfaces/reply-pool.ts) for images.
// Run: npm run build && node dist/bench/micro/image-reply.js
import { performance } from 'node:perf_hooks';
import type { Metered } from '../../src/billing/types.js';
import { OffloadPool } from '../../src/offload/pool.js';
import { imagesCodec } from '../../src/surfaces/images/codec.js';
import type { DecodedImages } from '../../src/surfaces/images/reply.js';

const call = { requestId: 'req_bench', model: 'canvas', created: 0, orgId: 'org' };
const settled: Metered = { inputTokens: 0, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 0, imageUnits: 2, source: 'supplier' };
const meta = { n: 2 };

/** A supplier reply of 2 images of `bytes` raw bytes each, as base64. */
function reply(bytes: number): Buffer {
  const b64 = Buffer.alloc(bytes, 0x5a).toString('base64');
  return Buffer.from(JSON.stringify({ created: 1, data: [{ b64_json: b64, revised_prompt: 'x' }, { b64_json: b64 }] }));
}

function inlineMicros(bytes: Buffer, n: number): number {
  const start = performance.now();
  for (let i = 0; i < n; i++) imagesCodec.render(imagesCodec.decodeReply(JSON.parse(bytes.toString('utf8')), meta), call, settled);
  return ((performance.now() - start) * 1000) / n;
}

async function pooledMicros(pool: OffloadPool, bytes: Buffer, n: number, inFlight: number): Promise<[number, number]> {
  const elu0 = performance.eventLoopUtilization();
  const cpu0 = process.cpuUsage();
  let next = 0;
  const lane = async () => {
    while (next++ < n) {
      // A fresh buffer per call, as each supplier reply is: the pool moves it.
      const r = await pool.decodeReply('images', Buffer.from(bytes), meta);
      if (!r.ok) throw new Error('decode failed');
      imagesCodec.render(r.decoded as DecodedImages, call, settled);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  const cpu = process.cpuUsage(cpu0);
  return [(performance.eventLoopUtilization(elu0).active * 1000) / n, (cpu.user + cpu.system) / n];
}

const pool = new OffloadPool(1, 1, 64);
await pooledMicros(pool, reply(1024), 200, 4); // start the thread
console.log('image bytes × 2 | reply bytes | inline µs (main thread) | pool µs (main thread) | pool µs (all threads) | pays?');
for (const size of [1024, 4096, 6144, 8192, 16384, 65536, 262144, 1048576, 3145728]) {
  const bytes = reply(size);
  const n = Math.max(10, Math.min(2000, Math.round(2e8 / bytes.length / 20)));
  inlineMicros(bytes, Math.max(5, n >> 3));
  const inline = inlineMicros(bytes, n);
  await pooledMicros(pool, bytes, Math.max(5, n >> 3), 4);
  const [pooled, pooledAll] = await pooledMicros(pool, bytes, n, 4);
  console.log(
    `${String(size).padStart(15)} | ${String(bytes.length).padStart(11)} | ${inline.toFixed(1).padStart(23)} | ${pooled.toFixed(1).padStart(21)} | ${pooledAll.toFixed(1).padStart(21)} | ${pooled < inline ? 'yes' : 'no'}`,
  );
}
await pool.close();
