// pools.piscina_nice: how long a small call waits for the event loop while
// the pool's thread is busy on the same core, for each nice value. The event
// loop runs 400 "small calls" a second on a fixed schedule (each ~100 µs of
// work, timed from when it was due, as bench/loadgen.ts's open loop does)
// while two count_tokens tasks of a 1 MB text keep one pool thread busy.
// Nice values alternate round by round in one process, so a noisy machine
// hurts them alike; beside the wait of each call it reports how long the
// event loop's thread was ready to run but waiting for the CPU (schedstat). Run it pinned to ONE core, which is the case it is about:
//   npm run build && taskset -c 0 node dist/bench/micro/pool-nice.js [rounds] [ms]
import { readdirSync, readFileSync } from 'node:fs';
import { Histogram } from '../histogram.js';
import { OffloadPool } from '../../src/offload/pool.js';

const NICES = [0, 5, 10, 19];
const RATE = 400;
const rounds = Number(process.argv[2] ?? 4);
const slotMs = Number(process.argv[3] ?? 2000);
const TEXT = 'The gateway counts the tokens of a long conversation in its pool. '.repeat(16_000); // ~1 MB

/**
 * Nanoseconds this process's main thread (and, apart, all its other threads)
 * spent waiting on a run queue for a CPU (schedstat run_delay): the time the
 * event loop was ready and not running. Averaged over a slot it is far less
 * noisy than a tail latency on a shared machine.
 */
function runDelayNs(): { main: number; others: number } {
  let main = 0;
  let others = 0;
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const wait = Number(readFileSync(`/proc/self/task/${tid}/schedstat`, 'latin1').split(' ')[1]);
      if (Number(tid) === process.pid) main += wait;
      else others += wait;
    } catch {
      // the thread ended meanwhile
    }
  }
  return { main, others };
}

function spin(us: number): void {
  const end = performance.now() + us / 1000;
  while (performance.now() < end);
}

/** Small calls at RATE per second for `ms`, while `busy` keeps the pool working; their wait from due time to start. */
async function slot(pool: OffloadPool, ms: number): Promise<{ wait: Histogram; pooled: number; delayMainMs: number }> {
  const wait = new Histogram();
  const delay0 = runDelayNs();
  let running = true;
  let pooled = 0;
  const busy = async (): Promise<void> => {
    while (running) {
      await pool.countTokens([TEXT]);
      pooled++;
    }
  };
  const lanes = [busy(), busy()];
  const start = performance.now();
  await new Promise<void>((resolve) => {
    let sent = 0;
    const tick = (): void => {
      const now = performance.now();
      for (let due = start + (sent * 1000) / RATE; due <= now; due = start + (sent * 1000) / RATE) {
        wait.record((performance.now() - due) * 1e6);
        spin(100);
        sent++;
      }
      if (now - start < ms) setTimeout(tick, 1);
      else resolve();
    };
    tick();
  });
  const delayMainMs = (runDelayNs().main - delay0.main) / 1e6;
  running = false;
  await Promise.all(lanes);
  return { wait, pooled, delayMainMs };
}

const pools = new Map(NICES.map((n) => [n, new OffloadPool(1, 1, 64, undefined, n)]));
for (const p of pools.values()) await p.countTokens(['warm up']);
const totals = new Map(NICES.map((n) => [n, { wait: new Histogram(), pooled: 0, delayMainMs: 0 }]));
for (let r = 0; r < rounds; r++) {
  for (const n of NICES) {
    const { wait, pooled, delayMainMs } = await slot(pools.get(n)!, slotMs);
    const t = totals.get(n)!;
    t.wait.merge(wait);
    t.pooled += pooled;
    t.delayMainMs += delayMainMs;
  }
}
console.log(`small calls' wait for the event loop (ms) beside a busy pool thread on the same core; ${rounds} rounds of ${slotMs} ms per nice value, interleaved`);
console.log('nice | p50 | p90 | p99 | max | event loop runnable but waiting for the CPU, ms per s | 1 MB count_tokens done per second');
for (const n of NICES) {
  const t = totals.get(n)!;
  const q = (x: number): string => t.wait.percentileMs(x).toFixed(3);
  const perSecond = (x: number): string => ((x * 1000) / (rounds * slotMs)).toFixed(1);
  console.log(`${String(n).padStart(4)} | ${q(0.5)} | ${q(0.9)} | ${q(0.99)} | ${q(1)} | ${perSecond(t.delayMainMs)} | ${perSecond(t.pooled)}`);
}
await Promise.all([...pools.values()].map((p) => p.close()));
