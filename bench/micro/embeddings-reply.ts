// Where decoding an embeddings reply in the worker-thread pool pays: the
// main thread's time per reply, inline (JSON.parse + decode + render, as
// pipeline/answer-unary.ts does below the threshold) against a pool hop
// (move the bytes to a thread, await the decoded data, its bytes moved back,
// render), for supplier replies of float arrays and of base64 of growing size
// (reply-hop.ts).
// The result sets REPLY_POOL_BYTES (src/surfaces/reply-pool.ts).
// Run: npm run build && node dist/bench/micro/embeddings-reply.js
import { OffloadPool } from '../../src/offload/pool.js';
import { vectorOf } from '../../src/simulator/embeddings.js';
import { inlineMicros, pooledMicros, type ReplyCase } from './reply-hop.js';

const embeddings: ReplyCase = {
  surface: 'embeddings',
  call: { requestId: 'req_bench', model: 'embed', created: 0, orgId: 'org' },
  meta: {},
  settled: { inputTokens: 100, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 0, imageUnits: 0, source: 'supplier' },
};

/** A supplier reply of `count` vectors of `dims`, as float arrays or base64 (as the simulator writes them). */
function reply(count: number, dims: number, floats: boolean): string {
  const data = Array.from({ length: count }, (_, i) => {
    const v = vectorOf(`input ${i}`, dims);
    return { object: 'embedding', index: i, embedding: floats ? Array.from(v) : Buffer.from(v.buffer).toString('base64') };
  });
  return JSON.stringify({ object: 'list', data, model: 'embed-1', usage: { prompt_tokens: 100, total_tokens: 100 } });
}

const pool = new OffloadPool(1, 1, 64);
await pooledMicros(pool, embeddings, reply(1, 16, true), 200, 4); // start the thread
console.log('reply      | vectors × dims | reply bytes | inline µs (main thread) | pool µs (main thread) | pool µs (all threads) | pays?');
const shapes: Array<[number, number]> = [[1, 256], [1, 1536], [2, 1536], [4, 1536], [8, 1536], [32, 1536], [128, 1536], [128, 3072]];
for (const floats of [true, false]) {
  for (const [count, dims] of shapes) {
    const text = reply(count, dims, floats);
    const n = Math.max(10, Math.min(2000, Math.round(2e8 / text.length / 20)));
    inlineMicros(embeddings, text, Math.max(5, n >> 3));
    const inline = inlineMicros(embeddings, text, n);
    await pooledMicros(pool, embeddings, text, Math.max(5, n >> 3), 4);
    const [pooled, pooledAll] = await pooledMicros(pool, embeddings, text, n, 4);
    console.log(
      `${(floats ? 'floats' : 'base64').padEnd(10)} | ${`${count} × ${dims}`.padStart(14)} | ${String(text.length).padStart(11)} | ${inline.toFixed(1).padStart(23)} | ${pooled.toFixed(1).padStart(21)} | ${pooledAll.toFixed(1).padStart(21)} | ${pooled < inline ? 'yes' : 'no'}`,
    );
  }
}
await pool.close();
