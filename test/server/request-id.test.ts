// Request ids (src/server/context.ts newRequestId): `req_` and 32 hex digits
// laid out as a UUIDv7, so the usage rows' primary key grows at its right
// edge. They must stay unique, carry the clock they were made at, and sort in
// the order they were made across milliseconds.
import t from 'tap';
import { newRequestId } from '../../src/server/context.js';

t.test('shape: req_ + a UUIDv7 in hex, its random part unique', async (t) => {
  const seen = new Set<string>();
  for (let i = 0; i < 50_000; i++) {
    const id = newRequestId();
    if (!/^req_[0-9a-f]{12}7[0-9a-f]{3}[89ab][0-9a-f]{15}$/.test(id)) t.fail(`not a UUIDv7 in hex: ${id}`);
    seen.add(id);
  }
  t.equal(seen.size, 50_000, 'no id repeats');
});

t.test('time-ordered: the first 48 bits are the millisecond clock', async (t) => {
  const ids: string[] = [];
  const before = Date.now();
  const until = before + 25;
  while (Date.now() < until) ids.push(newRequestId());
  const after = Date.now();
  const stamps = ids.map((id) => parseInt(id.slice(4, 16), 16));
  t.ok(stamps[0] >= before && stamps.at(-1)! <= after, 'stamps lie in the window they were made in');
  t.ok(new Set(stamps).size >= 10, 'the stamp moves with the clock');
  const sorted = [...ids].sort((a, b) => a.slice(0, 16).localeCompare(b.slice(0, 16)));
  t.same(sorted.map((id) => id.slice(0, 16)), ids.map((id) => id.slice(0, 16)), 'ids made later sort later (by their stamp)');
});

t.test('the random digits are uniform, the variant one of 8 9 a b', async (t) => {
  const n = 64_000;
  // counts[position][digit] over the 19 digits after the version nibble
  const counts = Array.from({ length: 19 }, () => new Array<number>(16).fill(0));
  for (let i = 0; i < n; i++) {
    const id = newRequestId();
    for (let p = 0; p < 19; p++) counts[p][parseInt(id[17 + p], 16)]++;
  }
  for (let p = 0; p < 19; p++) {
    const digits = p === 3 ? [8, 9, 10, 11] : Array.from({ length: 16 }, (_, d) => d);
    const expected = n / digits.length;
    const off = digits.filter((d) => Math.abs(counts[p][d] - expected) > expected * 0.1);
    const outside = counts[p].reduce((sum, c, d) => (digits.includes(d) ? sum : sum + c), 0);
    t.ok(off.length === 0 && outside === 0, `position ${17 + p}: every digit within 10% of ${expected} (off: ${off.join(',') || 'none'}, outside: ${outside})`);
  }
});
