// The allotments' registry of calls in progress (src/ledger/call-table.ts): it
// must answer as a Map would through any mix of sets and deletes (its
// deletion shifts entries back along their probe runs, where a mistake loses
// or duplicates a call), across growth and shrinking; and, once it is old, a
// set and a delete at a steady size must leave nothing in the old generation,
// which is why it exists.
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import t, { type Test } from 'tap';
import { CallTable } from '../../src/ledger/call-table.js';
import { prng } from '../helpers/prng.js';

function sameAs(t: Test, table: CallTable<number>, model: Map<string, number>, at: string): boolean {
  if (table.size !== model.size) return t.fail(`${at}: size ${table.size}, the model's ${model.size}`) as false;
  for (const [k, v] of model) if (table.get(k) !== v) return t.fail(`${at}: ${k} reads ${table.get(k)}, the model ${v}`) as false;
  const seen = new Map<string, number>();
  table.forEach((v, k) => {
    if (seen.has(k)) t.fail(`${at}: ${k} visited twice`);
    seen.set(k, v);
  });
  if (seen.size !== model.size) return t.fail(`${at}: forEach visited ${seen.size}, the model holds ${model.size}`) as false;
  return true;
}

t.test('reads as a Map through random sets, deletes and takes, growing and shrinking', (t) => {
  const r = prng(0x32c0ffee);
  const table = new CallTable<number>();
  const model = new Map<string, number>();
  // Request ids as the gateway makes them, and a few look-alikes that differ in one place.
  const ids = Array.from({ length: 12_000 }, (_, i) => (i % 7 === 0 ? `req_${'0'.repeat(31)}${i % 10}` + i : `req_${Math.floor(r() * 2 ** 52).toString(16).padStart(32, '0')}`));
  let ok = true;
  // Three phases: fill past the shrink threshold, churn, drain to a few.
  const phases: Array<[number, number]> = [
    [20_000, 0.8],
    [40_000, 0.5],
    [40_000, 0.02],
  ];
  let step = 0;
  for (const [ops, pSet] of phases) {
    for (let i = 0; i < ops && ok; i++, step++) {
      const k = ids[Math.floor(r() * ids.length)]!;
      if (r() < pSet) {
        table.set(k, step);
        model.set(k, step);
      } else if (r() < 0.5) {
        const [was, wasInModel] = [table.delete(k), model.delete(k)];
        if (was !== wasInModel) ok = t.fail(`step ${step}: delete(${k}) said ${was}`) as false;
      } else {
        // take: the value and its removal in one lookup
        const [value, inModel] = [table.take(k), model.get(k)];
        model.delete(k);
        if (value !== inModel) ok = t.fail(`step ${step}: take(${k}) gave ${value}, the model ${inModel}`) as false;
      }
      if (table.has(k) !== model.has(k)) ok = t.fail(`step ${step}: has(${k}) ${table.has(k)}`) as false;
      if (step % 5_000 === 0) ok &&= sameAs(t, table, model, `step ${step}`);
    }
    ok &&= sameAs(t, table, model, `after a phase (${model.size} left)`);
  }
  t.ok(ok, 'every step agreed with the model');
  t.ok(model.size < 500, `the drain left ${model.size} entries of up to ~9,000 (the table shrank twice on the way)`);
  for (const k of [...model.keys()]) table.delete(k);
  t.equal(table.size, 0, 'empty after every entry is deleted');
  t.equal(table.get(ids[0]!), undefined);
  t.end();
});

t.test('a key set twice keeps one entry, with the later value', (t) => {
  const table = new CallTable<string>();
  table.set('req_a', 'first');
  table.set('req_a', 'second');
  t.equal(table.size, 1);
  t.equal(table.get('req_a'), 'second');
  t.equal(table.delete('req_a'), true);
  t.equal(table.delete('req_a'), false, 'a second delete finds nothing');
  table.set('req_b', 'third');
  t.equal(table.take('req_b'), 'third', 'take gives the value');
  t.equal(table.size, 0, 'and removes it');
  t.equal(table.take('req_b'), undefined, 'a second take finds nothing');
  t.end();
});

t.test('an old table at a steady size allocates nothing in the old generation', (t) => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const oldSpace = (): number => getHeapSpaceStatistics().find((s) => s.space_name === 'old_space')!.space_used_size;
  const table = new CallTable<object>();
  const ids = Array.from({ length: 1_000 }, (_, i) => `req_${i.toString(16).padStart(32, '0')}`);
  const calls = ids.map(() => ({}));
  for (let i = 0; i < 8; i++) table.set(ids[i]!, calls[i]!); // a few calls in progress throughout
  const churn = (n: number): void => {
    for (let i = 0; i < n; i++) {
      const j = 8 + (i % 992);
      table.set(ids[j]!, calls[j]!);
      table.delete(ids[j]!);
    }
  };
  churn(20_000); // compiled before it is measured: what the compiler keeps lives in the old generation too
  gc();
  gc(); // the table and its arrays are in the old generation now
  const before = oldSpace();
  const N = 200_000;
  churn(N);
  const perOp = (oldSpace() - before) / N;
  // A Map here adds 60–150 bytes per set and delete (V8 rebuilds its table in the old generation).
  t.ok(perOp < 4, `old generation grew ${perOp.toFixed(2)} bytes per set and delete`);
  t.equal(table.size, 8);
  t.end();
});
