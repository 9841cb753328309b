// The nesting scan (src/server/json-depth.ts) against the truth: random JSON
// documents with strings full of brackets, quotes and backslash runs; the
// scan must agree with the depth of the parsed tree at every limit, and name
// the member where the limit is crossed.
import t from 'tap';
import { memberAt, nestingBeyond, nestingFault } from '../../src/server/json-depth.js';
import { prng } from '../helpers/prng.js';

const TRICKY = ['[', ']', '{', '}', '"', '\\', '\\\\', '\\"', 'é', '😀', 'x'.repeat(40), '\\'.repeat(33) + '"'];

function randomValue(r: () => number, depth: number): unknown {
  const k = r();
  if (depth > 12 || k < 0.35) {
    if (k < 0.2) return Array.from({ length: Math.floor(r() * 4) }, () => TRICKY[Math.floor(r() * TRICKY.length)]).join('');
    return k < 0.3 ? Math.floor(r() * 100) : null;
  }
  if (k < 0.65) return Array.from({ length: Math.floor(r() * 4) }, () => randomValue(r, depth + 1));
  const o: Record<string, unknown> = {};
  for (let i = 0; i < Math.floor(r() * 4); i++) o[TRICKY[Math.floor(r() * TRICKY.length)] + i] = randomValue(r, depth + 1);
  return o;
}

function depthOf(v: unknown): number {
  if (v === null || typeof v !== 'object') return 0;
  let max = 0;
  for (const c of Object.values(v)) max = Math.max(max, depthOf(c));
  return max + 1;
}

t.test('issue 12 item 5: the byte scan agrees with the parsed depth on random documents', async (t) => {
  const seed = Number(process.env.FUZZ_SEED ?? Date.now() % 1e9);
  t.comment(`seed ${seed}`);
  const r = prng(seed);
  let checked = 0;
  for (let i = 0; i < 2000; i++) {
    const v = randomValue(r, 0);
    const text = Buffer.from(JSON.stringify(v));
    const truth = depthOf(v);
    for (const limit of [Math.max(0, truth - 1), truth, truth + 1]) {
      const beyond = nestingBeyond(text, limit);
      if ((beyond >= 0) !== truth > limit) {
        t.fail(`seed ${seed}, doc ${i}: depth ${truth}, limit ${limit}, scan said ${beyond}: ${text.toString().slice(0, 200)}`);
        return;
      }
      checked++;
    }
  }
  t.pass(`${checked} checks`);
});

t.test('issue 12 item 5: the refused member is named', async (t) => {
  const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);
  const fault = (s: string, max: number) => nestingFault(Buffer.from(s), max);
  t.equal(fault(deep(64), 64), null);
  t.equal(fault(deep(65), 64), '', 'a top-level array names no member');
  t.equal(fault(`{"messages":[{"role":"assistant","tool_calls":[{"function":{"arguments":${deep(100)}}}]}]}`, 64), 'messages[0].tool_calls[0].function.arguments');
  t.equal(fault(`{"a":1,"b":[1,{"c":2},{"d":${deep(10)}}]}`, 5), 'b[2].d', 'indices count commas');
  t.equal(fault(`{"k\\"[{":${deep(10)}}`, 4), 'k"[{', 'an escaped key');
  t.equal(fault(`{"s":"[[[[[[[[[[\\\\","t":${deep(3)}}`, 3), 't', 'brackets after an escaped backslash ending a string');
  t.equal(fault(`{"s":"${'x'.repeat(50)}\\"[[[[[[","t":1}`, 1), null, 'an escaped quote in a long string');
  const long = memberAt(Buffer.from('{"a":'.repeat(100) + '1' + '}'.repeat(100)), 80);
  t.ok(long !== null && long.length <= 260, 'a very deep path is cut');
});
