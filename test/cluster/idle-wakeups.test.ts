// Issue 32: an idle gateway lets its processes sleep. Every process ran a
// 10 ms event-loop timer (two in each worker), and each worker cut its books
// every 100 ms and swept its allotments every 250 ms, with or without work:
// ~100 wake-ups a second in the primary and ~120 in each worker. Now the
// monitors of each process pause while it is idle (src/metrics/event-loop.ts)
// and the books' cut and the allotments' sweep run only while a batch or an
// allotment is open. Counted from outside after real calls, on the embedded
// default and on the Redis host, each with two workers: the voluntary context
// switches of each process's main thread, each one a wake-up.
import { readFileSync } from 'node:fs';
import t, { type Test } from 'tap';
import { startGateway, type Gateway } from '../helpers/gateway.js';
import { ADMIN_TOKEN, provision } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';
import { workerPids } from '../helpers/workers.js';
import { scrape } from '../ledger/scrape.js';
import { sharedRedis } from '../e2e/scale-out-helpers.js';

/** Wake-ups a second an idle process may still have: the catalog's and the key log's polls and their answers, heartbeats. */
const IDLE_WAKEUPS_MAX = 15;
/** The Redis host's primary also renews its leases (every 500 ms) and each shard's blocking read returns empty now and then. */
const REDIS_PRIMARY_WAKEUPS_MAX = 25;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function mainThreadSwitches(pid: number): number {
  const status = readFileSync(`/proc/${pid}/task/${pid}/status`, 'utf8');
  return Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)![1]);
}

async function callsThenQuiet(t: Test, gw: Gateway, primaryMax: number): Promise<void> {
  const { key } = await provision(gw.url, { balance: '10.00' });
  const chat = async (i: number): Promise<number> => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'nw-swift-1', messages: [{ role: 'user', content: `call ${i}` }], max_tokens: 16 }),
    });
    await res.text();
    return res.status;
  };
  const statuses = await Promise.all(Array.from({ length: 24 }, (_, i) => chat(i)));
  t.same([...new Set(statuses)], [200], 'the calls were answered');
  const busy = await scrape(gw.opsUrl);
  t.ok(busy.text.includes('tollgate_event_loop_delay_seconds{role="worker"'), 'the workers measured their loops while they had work');

  // Allotments go back after 1 s unused, a batch is cut 100 ms after its first call, a monitor pauses within 2 s.
  await sleep(3500);
  const workers = workerPids(gw.proc.pid!).filter((pid) => readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'node'); // not the embedded PostgreSQL
  const pids = [gw.proc.pid!, ...workers];
  t.equal(pids.length, 3, 'a primary and two workers');
  const before = pids.map(mainThreadSwitches);
  const seconds = 3;
  await sleep(seconds * 1000);
  const rates = pids.map((pid, i) => (mainThreadSwitches(pid) - before[i]) / seconds);
  t.ok(rates[0] <= primaryMax, `the primary: ${rates[0].toFixed(1)} wake-ups a second (≤ ${primaryMax})`);
  for (const [i, rate] of rates.slice(1).entries()) t.ok(rate <= IDLE_WAKEUPS_MAX, `worker ${i + 1}: ${rate.toFixed(1)} wake-ups a second (≤ ${IDLE_WAKEUPS_MAX})`);

  // Asleep, not stuck: a call is answered, and every process still reports its loop (on time while it was idle).
  t.equal(await chat(99), 200, 'a call after the quiet is answered');
  const after = await scrape(gw.opsUrl);
  t.ok(after.text.includes('tollgate_event_loop_delay_seconds{role="primary"'), 'the primary\'s loop figures');
  t.ok(after.text.includes('tollgate_event_loop_delay_seconds{role="worker"'), 'the workers\' loop figures');
}

t.test('the embedded default: after its calls, the primary and workers wake a few times a second, not a hundred', async (t) => {
  const gw = await startGateway({ workers: 2, env: { ADMIN_TOKEN } });
  t.teardown(() => gw.stop());
  await callsThenQuiet(t, gw, IDLE_WAKEUPS_MAX);
});

t.test('the Redis host: the same, and a shard\'s housekeeping that finds nothing is no work', async (t) => {
  const redisUrl = await sharedRedis(t);
  const db = redisUrl === null ? null : await testDatabase(t);
  if (redisUrl === null || db === null) return;
  const gw = await startGateway({ workers: 2, env: { ADMIN_TOKEN, DATABASE_URL: db, REDIS_URL: redisUrl } });
  t.teardown(() => gw.stop());
  await callsThenQuiet(t, gw, REDIS_PRIMARY_WAKEUPS_MAX);
});
