// The supplier SSE reader runs once per upstream chunk of every stream: its
// cost per event, on chunks shaped as suppliers send them (one event per
// chunk, many per chunk when a fast supplier's writes coalesce, one event
// split over two chunks), and the cost of an event that never ends (a
// supplier sending bytes with no blank line, refused at the event bound).
// Run: npm run build && node dist/bench/micro/sse-reader.js
import { performance } from 'node:perf_hooks';
import { SseReader } from '../../src/suppliers/sse-reader.js';

const EVENT =
  'data: {"id":"chatcmpl-3f9a1c00000001","object":"chat.completion.chunk","created":1790000000,"model":"nw-swift-1",' +
  '"choices":[{"index":0,"delta":{"content":" river"},"logprobs":null,"finish_reason":null}]}\n\n';
const enc = new TextEncoder();

function chunks(shape: string): Uint8Array[] {
  const events = 4096;
  if (shape === 'one event per chunk') return Array.from({ length: events }, () => enc.encode(EVENT));
  if (shape === '16 events per chunk') return Array.from({ length: events / 16 }, () => enc.encode(EVENT.repeat(16)));
  // split: every event cut in two, so every other chunk ends mid-event
  const out: Uint8Array[] = [];
  const half = EVENT.length >> 1;
  for (let i = 0; i < events; i++) out.push(enc.encode(EVENT.slice(0, half)), enc.encode(EVENT.slice(half)));
  return out;
}

/** ns per event over `rounds` passes of the whole stream. */
function run(input: Uint8Array[], rounds: number): number {
  let events = 0;
  const start = performance.now();
  for (let r = 0; r < rounds; r++) {
    const reader = new SseReader(8 << 20);
    for (const c of input) events += reader.push(c).length;
  }
  return ((performance.now() - start) * 1e6) / events;
}

console.log('shape | ns per event (median of 7)');
for (const shape of ['one event per chunk', '16 events per chunk', 'each event split in two']) {
  const input = chunks(shape);
  run(input, 20); // warm up
  const samples = Array.from({ length: 7 }, () => run(input, 20)).sort((a, b) => a - b);
  console.log(`${shape} | ${samples[3]!.toFixed(0)}`);
}

// 16 MiB with no newline, 64 KiB per chunk: the reader refuses it at the 8 MiB event bound.
const flood = new Uint8Array(64 << 10).fill(0x78);
const start = performance.now();
const reader = new SseReader(8 << 20);
let pushed = 0;
let refused = false;
try {
  while (pushed < 16 << 20) {
    reader.push(flood);
    pushed += flood.length;
  }
} catch {
  refused = true;
}
const ms = (performance.now() - start).toFixed(1);
console.log(`no newline | ${refused ? `refused after ${(pushed / 1048576).toFixed(1)} MiB` : `16 MiB buffered, not refused`} in ${ms} ms`);
