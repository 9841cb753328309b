// The per-key concurrency cap (src/pipeline/key-slots.ts). A key's count
// stays in its Map at zero (deleting it would rebuild the Map's table about
// once a call), so what must hold is that a count back at zero admits as a
// new key does, and that a worker serving very many keys still forgets them.
import t from 'tap';
import { KeySlots } from '../../src/pipeline/key-slots.js';

t.test('a key holds at most max slots; released ones are taken again', (t) => {
  const slots = new KeySlots(2);
  slots.take('k1');
  slots.take('k1');
  t.throws(() => slots.take('k1'), { code: 'concurrency_limited' }, 'a third call is refused');
  slots.take('k2'); // another key's slots are its own
  slots.release('k1');
  t.equal(slots.inProgress('k1'), 1);
  slots.take('k1');
  slots.release('k1');
  slots.release('k1');
  t.equal(slots.inProgress('k1'), 0, 'back at zero');
  slots.take('k1');
  slots.take('k1');
  t.equal(slots.inProgress('k1'), 2, 'a key at zero has all of its slots again');
  t.end();
});

t.test('a worker serving very many keys forgets those whose calls ended', (t) => {
  const slots = new KeySlots(1);
  const inUse = (slots as unknown as { inUse: Map<string, number> }).inUse;
  for (let i = 0; i < 5_000; i++) {
    slots.take(`k${i}`);
    slots.release(`k${i}`);
  }
  t.ok(inUse.size <= 4_097, `${inUse.size} keys remembered after 5,000 came and went`);
  t.equal(Array.from({ length: 5_000 }, (_, i) => slots.inProgress(`k${i}`)).filter((n) => n !== 0).length, 0, 'none has a call in progress');
  slots.take('k4999');
  t.throws(() => slots.take('k4999'), { code: 'concurrency_limited' }, 'a forgotten key is capped as before');
  t.end();
});
