// The memory.* settings reach the HTTP workers' command lines (V8 sizes a heap
// when its process starts), and only theirs: the primary keeps its own flags.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { primaryHeapFlags, workerHeapFlags } from '../../src/cluster/heap-flags.js';
import { startGateway } from '../helpers/gateway.js';
import { workerPids } from '../helpers/workers.js';

const argv = (pid: number): string[] => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter((a) => a !== '');

t.test('flags from the settings; 0 leaves V8 its own choice', async (t) => {
  t.same(workerHeapFlags({ semi_space_mb: 0, heap_growing_percent: 0, reducer: true }), []);
  t.same(workerHeapFlags({ semi_space_mb: 2, heap_growing_percent: 50, reducer: false }), ['--max-semi-space-size=2', '--heap-growing-percent=50', '--no-memory-reducer']);
  t.same(workerHeapFlags({ semi_space_mb: 0, heap_growing_percent: 25, reducer: true }), ['--heap-growing-percent=25']);
  t.same(primaryHeapFlags({ semi_space_mb: 2, heap_growing_percent: 50, reducer: false }), ['--heap-growing-percent=50'], 'the primary sets only the growth, at run time');
  t.same(primaryHeapFlags({ semi_space_mb: 2, heap_growing_percent: 0, reducer: false }), []);
});

t.test('a real gateway: every worker runs with the configured flags, the primary without them on its command line', async (t) => {
  const gw = await startGateway({ workers: 2, env: { HEAP_SEMI_SPACE_MB: '3', HEAP_GROWING_PERCENT: '40' } });
  t.teardown(() => gw.stop());
  const workers = workerPids(gw.proc.pid!).filter((pid) => argv(pid).some((a) => a.endsWith('main.js')));
  t.equal(workers.length, 2, 'two HTTP workers');
  for (const pid of workers) {
    const args = argv(pid);
    t.ok(args.includes('--max-semi-space-size=3'), `worker ${pid}: ${args.join(' ')}`);
    t.ok(args.includes('--heap-growing-percent=40'), `worker ${pid}: ${args.join(' ')}`);
    t.ok(args.includes('--no-memory-reducer'), `worker ${pid}: the memory reducer off by default`);
  }
  const primary = argv(gw.proc.pid!);
  t.notOk(primary.some((a) => a.startsWith('--max-semi-space-size') || a.startsWith('--heap-growing-percent') || a === '--no-memory-reducer'), `primary: ${primary.join(' ')}`);
  const res = await fetch(`${gw.url}/healthz`);
  t.equal(res.status, 200, 'and it serves');
});
