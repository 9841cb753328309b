// pools.piscina_nice: the pool's threads run at the configured nice value and
// the HTTP worker's own thread keeps its own (Linux: per-thread setpriority).
import { readdirSync, readFileSync } from 'node:fs';
import t from 'tap';
import { OffloadPool } from '../../src/offload/pool.js';

/** nice value of each thread of this process, by tid (Linux /proc). */
function threadNice(): Map<number, number> {
  const out = new Map<number, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'latin1');
      out.set(Number(tid), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]));
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

const linux = process.platform === 'linux';

t.test('a pool with piscina_nice 7: its thread runs 7 nice steps below the caller, the calling thread keeps its value', { skip: linux ? false : 'per-thread nice values are read from Linux /proc' }, async (t) => {
  const before = threadNice();
  const own = before.get(process.pid)!;
  const pool = new OffloadPool(1, 1, 64, undefined, 7);
  t.teardown(() => pool.close());
  t.same(await pool.countTokens(['hello world']), [2], 'the task ran');
  const after = threadNice();
  const fresh = [...after].filter(([tid]) => !before.has(tid));
  t.ok(fresh.some(([, nice]) => nice === Math.min(19, own + 7)), `a new thread 7 below the caller (${own}): ${JSON.stringify(fresh)}`);
  t.equal(after.get(process.pid), own, 'the main thread is untouched');
});

t.test('a pool with piscina_nice 0 leaves its threads at the process\'s value', { skip: linux ? false : 'per-thread nice values are read from Linux /proc' }, async (t) => {
  const before = threadNice();
  const own = before.get(process.pid)!;
  const pool = new OffloadPool(1, 1, 64, undefined, 0);
  t.teardown(() => pool.close());
  await pool.countTokens(['hello']);
  const fresh = [...threadNice()].filter(([tid]) => !before.has(tid));
  t.ok(fresh.length > 0 && fresh.every(([, nice]) => nice === own), `new threads at ${own}: ${JSON.stringify(fresh)}`);
});

t.test('the pool listens for thread errors once, however many tasks it runs', async (t) => {
  const pool = new OffloadPool(1, 1, 64);
  t.teardown(() => pool.close());
  for (let i = 0; i < 20; i++) await pool.countTokens(['a']);
  const piscina = (pool as unknown as { pool: { listenerCount(e: string): number } }).pool;
  t.equal(piscina.listenerCount('error'), 1);
});

t.test('the pool\'s threads run with a young generation of their own size, whatever the HTTP worker\'s semi-spaces', async (t) => {
  const pool = new OffloadPool(1, 1, 64);
  t.teardown(() => pool.close());
  await pool.countTokens(['a']);
  const piscina = (pool as unknown as { pool: { threads: Array<{ resourceLimits?: { maxYoungGenerationSizeMb?: number } }> } }).pool;
  t.ok(piscina.threads.length > 0, 'a thread started');
  // 6 MB (src/offload/pool.ts POOL_THREAD_LIMITS): the flag the HTTP worker runs with (memory.semi_space_mb 8 → a 24 MB young generation) would cost each thread more memory for the same CPU.
  for (const thread of piscina.threads) t.equal(thread.resourceLimits?.maxYoungGenerationSizeMb, 6, 'the thread\'s young generation is capped at 6 MB');
});
