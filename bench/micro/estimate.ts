// What the input estimate of issue 12 item 7 costs on the model-call path.
// 1. prepare() inline before and after (the per-part walk is on every call):
//    run this file from both builds and compare the first table.
// 2. The fallback taken only when the cheap estimate does not fit the funds:
//    the request's text extracted on the main thread, then counted with
//    tiktoken in the pool (main-thread µs from event-loop utilization, and
//    wall latency per count), against counting inline.
// Run: npm run build && node dist/bench/micro/estimate.js
import { performance } from 'node:perf_hooks';
import { get_encoding } from 'tiktoken';
import { OffloadPool } from '../../src/offload/pool.js';
import { chatCodec } from '../../src/surfaces/chat/codec.js';

const WORDS = ['the', 'gateway', 'reserves', 'what', 'a', 'call', 'can', 'cost', 'before', 'calling', 'its', 'supplier', 'and', 'settles', 'after'];

function text(bytes: number): string {
  let s = '';
  for (let i = 0; s.length < bytes; i++) s += WORDS[(i * 7) % WORDS.length] + (i % 11 === 10 ? '. ' : ' ');
  return s;
}

function body(bytes: number, images: number): Buffer {
  const turns = Math.max(2, Math.round(bytes / 2000));
  const messages: object[] = Array.from({ length: turns }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: text(bytes / turns) }));
  for (let i = 0; i < images; i++) {
    messages.push({ role: 'user', content: [{ type: 'text', text: 'and this' }, { type: 'image_url', image_url: { url: `https://example.com/${i}.png`, detail: 'high' } }] });
  }
  return Buffer.from(JSON.stringify({ model: 'nw-swift-1', messages, max_tokens: 256 }));
}

function inlineMicros(raw: Buffer, n: number): number {
  const start = performance.now();
  for (let i = 0; i < n; i++) chatCodec.prepare(JSON.parse(raw.toString('utf8')), raw.length);
  return ((performance.now() - start) * 1000) / n;
}

console.log('prepare() inline, µs per request (median of 5 runs)');
console.log('body bytes | images | µs');
for (const [size, images] of [[1_024, 0], [8_192, 0], [8_192, 4], [16_384, 0], [16_384, 16]] as const) {
  const raw = body(size, images);
  inlineMicros(raw, 2000);
  const runs = Array.from({ length: 5 }, () => inlineMicros(raw, 4000)).sort((a, b) => a - b);
  console.log(`${String(raw.length).padStart(10)} | ${String(images).padStart(6)} | ${runs[2]!.toFixed(2)}`);
}

const pool = new OffloadPool(1, 1, 64);
await pool.countTokens(['warm up']);
const enc = get_encoding('o200k_base');
console.log('\nfallback: extract the text + count its tokens');
console.log('body bytes | tokens | inline µs (main) | pool µs (main) | pool latency µs');
for (const size of [4_096, 40_960, 409_600]) {
  const raw = body(size, 0);
  const prepared = chatCodec.prepare(JSON.parse(raw.toString('utf8')), raw.length);
  const n = size > 100_000 ? 20 : 200;
  let tokens = 0;
  let start = performance.now();
  for (let i = 0; i < n; i++) tokens = enc.encode_ordinary(chatCodec.inputText(prepared)).length;
  const inline = ((performance.now() - start) * 1000) / n;
  const elu0 = performance.eventLoopUtilization();
  start = performance.now();
  for (let i = 0; i < n; i++) await pool.countTokens([chatCodec.inputText(prepared)]);
  const latency = ((performance.now() - start) * 1000) / n;
  const main = (performance.eventLoopUtilization(elu0).active * 1000) / n;
  console.log(`${String(raw.length).padStart(10)} | ${String(tokens).padStart(6)} | ${inline.toFixed(0).padStart(16)} | ${main.toFixed(0).padStart(14)} | ${latency.toFixed(0).padStart(15)}`);
}
enc.free();
await pool.close();
