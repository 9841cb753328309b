// The Redis host with every call inside its worker (issue 32): calls served
// from allotments are settled in their worker's books and told to their
// shard's owner per batch, so Redis sees a few commands per batch, not one
// per call; and a worker killed with -9 in the middle of a spend storm loses
// nothing: its instance's primary writes what its books held (gone-writers.ts),
// books exact, every answered call with its usage row.
import t from 'tap';
import { spawn } from 'node:child_process';
import { ownRedis } from '../e2e/scale-out-helpers.js';
import { missingRows } from './lib/books.js';
import { call, storm, type CallResult } from './lib/load.js';
import { children, listeners } from './lib/procs.js';
import { scenario, startRig } from './lib/rig.js';

const LEASE_MS = 2000;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The ops of the commands XADDed to ledger streams while `fn` runs (Redis's MONITOR, through redis-cli), counted. */
async function ledgerCommands(url: string, fn: () => Promise<void>): Promise<Map<string, number>> {
  const monitor = spawn('redis-cli', ['-u', url, 'monitor'], { stdio: ['ignore', 'pipe', 'ignore'] });
  const ops = new Map<string, number>();
  let pending = '';
  monitor.stdout.on('data', (chunk: Buffer) => {
    pending += chunk.toString();
    const lines = pending.split('\n');
    pending = lines.pop()!;
    for (const line of lines) {
      if (!line.includes('"xadd"')) continue;
      const op = /\\"o\\":\\"([a-z]+)\\"/.exec(line)?.[1] ?? '?';
      ops.set(op, (ops.get(op) ?? 0) + 1);
    }
  });
  await sleep(200); // monitoring
  try {
    await fn();
    await sleep(300); // the last batch written and told
  } finally {
    monitor.kill();
  }
  return ops;
}

const redis = await ownRedis(t);
const rig = redis === null ? null : await startRig(t, { workers: 2, env: { REDIS_URL: redis.url, HOLD_LEASE_MS: String(LEASE_MS), BILLING_FLUSH_MS: '100' } });
if (redis !== null && rig !== null) {
  const { gw } = rig;

  t.test('calls from allotments are told to their owner per batch: far fewer Redis commands than calls', async (t) => {
    // Creating the organization read its account view, which recalled its allotments; granting resumes once the view
    // is read (until 2026-11-27 it waited a second, and every call in that second was reserved through the owner).
    const { key } = await rig.org('50.00');
    await call(gw.url, key, 'chat', 'warm [sim:words=3]'); // the first grant
    const calls = 300;
    const results: CallResult[] = [];
    const ops = await ledgerCommands(redis.url, async () => {
      await Promise.all(
        Array.from({ length: 6 }, async (_, i) => {
          for (let n = i; n < calls; n += 6) results.push(await call(gw.url, key, 'chat', 'batched [sim:words=3]'));
        }),
      );
    });
    const ok = results.filter((r) => r.outcome === 'ok');
    t.equal(ok.length, calls, `${calls} calls answered`);
    const count = (op: string): number => ops.get(op) ?? 0;
    t.comment(`commands to the owner: ${JSON.stringify(Object.fromEntries(ops))}`);
    // A call the owner holds is reserved through it (one 'reserve') and settled through it (one 'settle'); a call from
    // its worker's allotment makes neither. Before issue 32 every call XADDed its settlement (300 'settle' here, against
    // a few dozen 'reserve'). How many calls find their allotment dry (at a second's turn: it holds admissions per
    // second) depends on the machine's pace; that a settlement goes through the owner only for a call it held does not.
    // The slack: calls in flight when their allotment retires at 30 s become holds of their own and settle through it.
    t.ok(count('settle') <= count('reserve') + 12, `${count('settle')} settlements through the owner, for ${count('reserve')} calls it held, of ${calls}`);
    t.ok(count('spent') > 0, `${count('spent')} batches told ('spent')`);
    // Reserved through the owner: a call that finds its allotment dry at a second's turn, one per worker per second or so.
    t.ok(count('reserve') <= calls / 10, `${count('reserve')} of ${calls} calls reserved through the owner (the rest from allotments)`);
    let missing = ok.map((r) => r.requestId!);
    for (const until = Date.now() + 5000; missing.length > 0 && Date.now() < until; await sleep(100)) missing = await missingRows(rig.db, missing);
    t.same(missing, [], 'every call has its usage row, written by its worker');
  });

  t.test('kill -9 of a worker, three times during a spend storm, on the Redis host', async (t) => {
    await scenario(
      t,
      rig,
      'kill -9 of a worker on the Redis host',
      async () => {
        const orgs = await Promise.all(Array.from({ length: 3 }, () => rig.org('0.05')));
        const load = storm(gw.url, orgs.map((o) => o.key), 8, ['chat', 'chat-stream', 'messages', 'responses'], 'spend [sim:words=20] [sim:delay_ms=5]');
        const settled = (): boolean => children(gw.proc.pid!).length === 2 && listeners(gw.port) === 2;
        for (let i = 0; i < 3; i++) {
          await sleep(700);
          for (const started = Date.now(); !settled(); await sleep(50)) if (Date.now() - started > 20_000) throw new Error('two workers not listening');
          const pids = children(gw.proc.pid!);
          process.kill(pids[i % pids.length], 'SIGKILL');
          for (const started = Date.now(); !(children(gw.proc.pid!).some((p) => !pids.includes(p)) && settled()); await sleep(50)) {
            if (Date.now() - started > 20_000) throw new Error('no replacement worker');
          }
          t.ok(true, `worker ${i + 1} killed and replaced`);
        }
        const results = await load.stop();
        for (const r of results) rig.report.count(r);
        t.same(results.filter((r) => r.outcome === 'broken'), [], `${results.length} calls: every answer in its envelope`);
        const ok = results.filter((r) => r.outcome === 'ok');
        t.ok(ok.length > 50, `${ok.length} calls answered`);
        // A call answered in the last flush_ms is in its worker's books' file, in the store a batch later.
        let missing = ok.map((r) => r.requestId!);
        for (const until = Date.now() + 5000; missing.length > 0 && Date.now() < until; await sleep(100)) missing = await missingRows(rig.db, missing);
        t.same(missing, [], 'every answered call has its usage row');
      },
      { holdWaitMs: LEASE_MS * 4 + 5000, maxBystanderErrorShare: 0.25 },
    );
  });
}
