// The compact live-key index against a Map as the reference.
import { createHash } from 'node:crypto';
import t from 'tap';
import { LiveKeyIndex } from '../../src/auth/key-index.js';

const h = (i: number): Buffer => createHash('sha256').update(`key-${i}`).digest();

t.test('set, has, delete, expiry agree with a Map through growth and churn', async (t) => {
  const index = new LiveKeyIndex();
  const ref = new Map<number, number | null>();
  let ops = 0;
  for (let round = 0; round < 40_000; round++) {
    const i = Math.floor(Math.random() * 8000);
    if (Math.random() < 0.6) {
      const exp = Math.random() < 0.5 ? null : 1000 + Math.floor(Math.random() * 1000);
      index.set(h(i), exp);
      ref.set(i, exp);
    } else {
      index.delete(h(i));
      ref.delete(i);
    }
    ops++;
  }
  t.equal(index.size, ref.size, `size after ${ops} operations`);
  let mismatches = 0;
  for (let i = 0; i < 8000; i++) {
    const exp = ref.get(i);
    const now = 1500;
    const want = exp !== undefined && (exp === null || now < exp);
    if (index.isLive(h(i), now) !== want || index.has(h(i)) !== (exp !== undefined)) mismatches++;
  }
  t.equal(mismatches, 0);
});

t.test('memory stays proportional to the live keys (tombstones are reclaimed)', async (t) => {
  const index = new LiveKeyIndex();
  for (let i = 0; i < 100_000; i++) {
    index.set(h(i), null);
    index.delete(h(i));
  }
  t.equal(index.size, 0);
  t.ok(index.bytes <= 1024 * 17 * 4, `churn of 100k keys leaves ${index.bytes} bytes`);
  const big = new LiveKeyIndex();
  for (let i = 0; i < 100_000; i++) big.set(h(i), null);
  t.ok(big.bytes / 100_000 <= 60, `${(big.bytes / 100_000).toFixed(1)} bytes per key`);
});

t.test('expiry: to the millisecond, as the key record holds it; null never expires', async (t) => {
  const index = new LiveKeyIndex();
  index.set(h(1), 10_100);
  t.ok(index.isLive(h(1), 10_099));
  t.notOk(index.isLive(h(1), 10_100), 'expired at its millisecond (not at the end of its second)');
  t.ok(index.has(h(1)), 'still present: the next full reload drops it');
  index.set(h(2), null);
  t.ok(index.isLive(h(2), Number.MAX_SAFE_INTEGER), 'never');
});

t.test('adopt swaps in a rebuilt index', async (t) => {
  const a = new LiveKeyIndex();
  a.set(h(1), null);
  const b = new LiveKeyIndex();
  b.set(h(2), null);
  a.adopt(b);
  t.notOk(a.has(h(1)));
  t.ok(a.has(h(2)));
  t.equal(a.size, 1);
});
