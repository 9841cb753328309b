// The pool's gate (src/offload/fair-share.ts): capacity, each owner's share,
// per-owner FIFO served to the owner holding fewest, withdrawal (issue 30 items 4 and 5).
import t from 'tap';
import { FairShare, ownerShare } from '../../src/offload/fair-share.js';

/** Enters `owner`, now or when its turn comes; resolves with the order it started in. */
function enter(gate: FairShare, owner: string, started: string[], label = owner): Promise<void> {
  if (gate.tryEnter(owner)) {
    started.push(label);
    return Promise.resolve();
  }
  return gate.wait(owner).then(() => void started.push(label));
}

const tick = () => new Promise((r) => setImmediate(r));

t.test('an owner holds at most three quarters of the slots, at least one', async (t) => {
  t.equal(ownerShare(1), 1);
  t.equal(ownerShare(2), 2);
  t.equal(ownerShare(4), 3);
  t.equal(ownerShare(32), 24);
  t.equal(ownerShare(64), 48);
});

t.test('issue 30 item 5: a flooding owner leaves slots to another, who starts at once', async (t) => {
  const gate = new FairShare(32);
  const started: string[] = [];
  for (let i = 0; i < 96; i++) void enter(gate, 'a', started);
  await tick();
  t.equal(gate.running, 24, "a's share");
  t.equal(gate.waiting, 72);
  void enter(gate, 'b', started);
  await tick();
  t.equal(started[started.length - 1], 'b', 'b started without waiting for a');
  t.equal(gate.running, 25);
});

t.test('issue 30 item 4: one slot (a CPU pool of one thread): a freed slot goes to the owner holding fewest, each owner in order', async (t) => {
  const gate = new FairShare(1);
  const started: string[] = [];
  for (let i = 0; i < 3; i++) void enter(gate, 'a', started, `a${i}`);
  await tick();
  void enter(gate, 'b', started, 'b0');
  void enter(gate, 'b', started, 'b1');
  await tick();
  t.same(started, ['a0'], 'one in the pool');
  for (let i = 0; i < 4; i++) {
    gate.leave(started[started.length - 1][0]);
    await tick();
  }
  t.same(started, ['a0', 'b0', 'a1', 'b1', 'a2'], 'round-robin between the owners, FIFO within each');
  gate.leave('a');
  t.equal(gate.running, 0);
  t.equal(gate.waiting, 0);
});

t.test('the fast path takes a slot without waiting, and leave() gives it back', async (t) => {
  const gate = new FairShare(2);
  t.ok(gate.tryEnter('a'));
  t.ok(gate.tryEnter('a'), 'an owner alone may use the whole of a two-slot pool');
  t.notOk(gate.tryEnter('b'), 'full');
  gate.leave('a');
  t.ok(gate.tryEnter('b'));
  gate.leave('a');
  gate.leave('b');
  t.equal(gate.running, 0);
});

t.test('a waiter withdrawn before its turn holds nothing and is never started', async (t) => {
  const gate = new FairShare(1);
  t.ok(gate.tryEnter('a'));
  let withdraw: ((err: Error) => void) | null = null;
  const waiting = gate.wait('b', (w) => (withdraw = w));
  const later: string[] = [];
  void enter(gate, 'c', later);
  withdraw!(new Error('client gone'));
  await t.rejects(waiting, { message: 'client gone' });
  t.equal(gate.waiting, 1, 'only c waits');
  gate.leave('a');
  await tick();
  t.same(later, ['c'], 'the slot went to c');
  t.equal(gate.running, 1);
});
