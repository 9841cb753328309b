// What bounding the nesting of a body costs (src/server/json-depth.ts): the
// byte scan against the JSON.parse it guards, on chat bodies of 1 KB and
// 100 KB — plain prose, and text dense with quotes and escapes (the scan's
// slow case: many short strings and backslashes) — and the prepare() step
// a model call runs anyway.
// Run: npm run build && node dist/bench/micro/json-depth.js
import { performance } from 'node:perf_hooks';
import { nestingBeyond } from '../../src/server/json-depth.js';
import { chatCodec } from '../../src/surfaces/chat/codec.js';

function body(bytes: number, dense: boolean): Buffer {
  const turns = Math.max(2, Math.round(bytes / 2000));
  const per = Math.floor(bytes / turns);
  const unit = dense ? 'say "hi" \\ {a:[1]} ' : 'lorem ipsum ';
  const messages = Array.from({ length: turns }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: unit.repeat(Math.max(1, Math.floor(per / (unit.length + (dense ? 6 : 0))))) }));
  return Buffer.from(JSON.stringify({ model: 'nw-swift-1', messages, max_tokens: 256 }));
}

/** A tool-heavy body: many short strings and nested objects (the worst case for the scan's per-byte loop). */
function toolsBody(bytes: number): Buffer {
  const tool = { type: 'function', function: { name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } }, required: ['city'] } } };
  const n = Math.max(1, Math.round(bytes / JSON.stringify(tool).length));
  return Buffer.from(JSON.stringify({ model: 'nw-swift-1', messages: [{ role: 'user', content: 'hi' }], tools: Array.from({ length: n }, (_, i) => ({ ...tool, function: { ...tool.function, name: `f${i}` } })) }));
}

function micros(n: number, fn: () => void): number {
  for (let i = 0; i < Math.min(n, 500); i++) fn();
  const start = performance.now();
  for (let i = 0; i < n; i++) fn();
  return ((performance.now() - start) * 1000) / n;
}

console.log('body                  | bytes   | scan µs | JSON.parse µs | parse+prepare µs | scan / parse+prepare');
for (const [name, make] of [
  ['prose', (b: number) => body(b, false)],
  ['quotes+escapes', (b: number) => body(b, true)],
  ['tools', toolsBody],
] as const) {
  for (const size of [1_024, 102_400]) {
    const raw = make(size);
    const n = size > 10_000 ? 2_000 : 50_000;
    let sink = 0;
    const scan = micros(n, () => (sink += nestingBeyond(raw, 64)));
    const parse = micros(n, () => (sink += JSON.parse(raw.toString('utf8')) === null ? 1 : 0));
    const prepare = micros(n, () => (sink += chatCodec.prepare(JSON.parse(raw.toString('utf8')), raw.length).rest.length));
    if (sink === 42) console.log('');
    const label = `${name} ${size >= 100_000 ? '100 KB' : '1 KB'}`;
    console.log(
      `${label.padEnd(21)} | ${String(raw.length).padStart(7)} | ${scan.toFixed(2).padStart(7)} | ${parse.toFixed(2).padStart(13)} | ${prepare.toFixed(2).padStart(16)} | ${((100 * scan) / prepare).toFixed(1).padStart(5)}%`,
    );
  }
}
