// A small seedable PRNG for the tests that generate inputs (mulberry32):
// the same seed gives the same sequence, so a failure can be replayed.

/** Numbers in [0, 1), the sequence fixed by `seed`. */
export function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let x = Math.imul(s ^ (s >>> 15), 1 | s);
    x ^= x + Math.imul(x ^ (x >>> 7), 61 | x);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}
