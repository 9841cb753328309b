// count_tokens: where its work should run. Main-thread µs per request for a
// messages conversation of growing size:
// - decode inline: JSON.parse + validate + segment on the event loop;
// - decode+count pool: the bytes moved to a thread that decodes AND counts
//   (workers/decode-local.ts), only numbers back — the path of large bodies;
// - count inline: tiktoken on the event loop; count pool: a hop with the
//   segments (the path of small bodies, after decoding inline).
// Main-thread time through the pool is read from event-loop utilization,
// which counts only this thread. Run: npm run build && node dist/bench/micro/count-tokens.js
import { performance } from 'node:perf_hooks';
import { get_encoding } from 'tiktoken';
import { OffloadPool } from '../../src/offload/pool.js';
import { decodeCountTokens } from '../../src/surfaces/count-tokens/estimate.js';

const WORDS = 'the quick brown fox jumps over a lazy dog while seven wizards quietly hex'.split(' ');

function body(bytes: number): Buffer {
  const turns = Math.max(1, Math.round(bytes / 2000));
  const per = Math.max(1, Math.floor(bytes / turns / 6));
  let w = 0;
  const text = () => Array.from({ length: per }, () => WORDS[w++ % WORDS.length]).join(' ');
  const messages = Array.from({ length: turns }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: text() }));
  return Buffer.from(JSON.stringify({ model: 'ks-quill-1', messages }));
}

function owned(raw: Buffer): Buffer {
  const copy = Buffer.allocUnsafeSlow(raw.length);
  raw.copy(copy);
  return copy;
}

async function mainThreadMicros(n: number, inFlight: number, task: () => Promise<unknown>): Promise<number> {
  const elu0 = performance.eventLoopUtilization();
  let next = 0;
  const lane = async () => {
    while (next++ < n) await task();
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return (performance.eventLoopUtilization(elu0).active * 1000) / n;
}

function inlineMicros(n: number, task: () => unknown): number {
  const start = performance.now();
  for (let i = 0; i < n; i++) task();
  return ((performance.now() - start) * 1000) / n;
}

const pool = new OffloadPool(1, 1, 64);
const encoder = get_encoding('o200k_base');
await pool.countTokens(['warm']);
await pool.decodeLocal('count_tokens', owned(body(1024)));
console.log('body bytes | decode inline | decode+count pool | count inline | count pool   (main-thread µs per request)');
for (const size of [200, 1_024, 4_096, 16_384, 65_536, 262_144, 1_048_576]) {
  const raw = body(size);
  const n = size >= 262_144 ? 20 : size >= 16_384 ? 200 : 2000;
  const decoded = decodeCountTokens(JSON.parse(raw.toString()), raw.length);
  const pooled = await pool.decodeLocal('count_tokens', owned(raw));
  if (!pooled.ok || (pooled.decoded as { counted: number | null }).counted === null) throw new Error('the pool did not count');
  inlineMicros(Math.min(n, 50), () => decodeCountTokens(JSON.parse(raw.toString()), raw.length));
  const decodeInline = inlineMicros(n, () => decodeCountTokens(JSON.parse(raw.toString()), raw.length));
  const decodePool = await mainThreadMicros(n, 4, () => pool.decodeLocal('count_tokens', owned(raw)));
  const countN = Math.max(5, Math.floor(n / 4));
  const countInline = inlineMicros(countN, () => decoded.texts.map((s) => encoder.encode_ordinary(s).length));
  const countPool = await mainThreadMicros(countN, 4, () => pool.countTokens(decoded.texts));
  const f = (x: number) => x.toFixed(1).padStart(12);
  console.log(`${String(raw.length).padStart(10)} |${f(decodeInline)}  |${f(decodePool).padStart(18)} |${f(countInline)} |${f(countPool)}`);
}
encoder.free();
await pool.close();
