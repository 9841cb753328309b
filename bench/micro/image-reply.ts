// Where decoding an images reply in the worker-thread pool pays: the main
// thread's time per reply inline against a pool hop (reply-hop.ts), for
// supplier replies of two base64 images of growing size. Checks
// REPLY_POOL_BYTES (src/surfaces/reply-pool.ts) for images.
// Run: npm run build && node dist/bench/micro/image-reply.js
import { OffloadPool } from '../../src/offload/pool.js';
import { inlineMicros, pooledMicros, type ReplyCase } from './reply-hop.js';

const images: ReplyCase = {
  surface: 'images',
  call: { requestId: 'req_bench', model: 'canvas', created: 0, orgId: 'org' },
  meta: { n: 2 },
  settled: { inputTokens: 0, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 0, imageUnits: 2, source: 'supplier' },
};

/** A supplier reply of 2 images of `bytes` raw bytes each, as base64. */
function reply(bytes: number): string {
  const b64 = Buffer.alloc(bytes, 0x5a).toString('base64');
  return JSON.stringify({ created: 1, data: [{ b64_json: b64, revised_prompt: 'x' }, { b64_json: b64 }] });
}

const pool = new OffloadPool(1, 1, 64);
await pooledMicros(pool, images, reply(1024), 200, 4); // start the thread
console.log('image bytes × 2 | reply bytes | inline µs (main thread) | pool µs (main thread) | pool µs (all threads) | pays?');
for (const size of [1024, 4096, 6144, 8192, 16384, 65536, 262144, 1048576, 3145728]) {
  const text = reply(size);
  const n = Math.max(10, Math.min(2000, Math.round(2e8 / text.length / 20)));
  inlineMicros(images, text, Math.max(5, n >> 3));
  const inline = inlineMicros(images, text, n);
  await pooledMicros(pool, images, text, Math.max(5, n >> 3), 4);
  const [pooled, all] = await pooledMicros(pool, images, text, n, 4);
  const cells = [String(size).padStart(15), String(text.length).padStart(11), inline.toFixed(1).padStart(23), pooled.toFixed(1).padStart(21), all.toFixed(1).padStart(21)];
  console.log(`${cells.join(' | ')} | ${pooled < inline ? 'yes' : 'no'}`);
}
await pool.close();
