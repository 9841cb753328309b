// Issue 39, fault 1: a PostgreSQL connection reset must cost callers at most
// some 503s while it lasts, never a process. Seen as the primary exiting 1 on
// `Unhandled 'error' event … read ECONNRESET … Client._handleErrorEvent`: a
// pool client checked out (a transaction, a catalog load, the journal's COPY)
// had no 'error' listener when its socket was reset.
//
// A gateway of two workers reaches a fresh database through a TCP proxy that
// resets (RST) every connection, and every new one, for RESET_MS, three times,
// under steady traffic. Then: the primary and both workers still run (the same
// pids; no 'worker died' line), every call got an answer in its envelope (no
// hang), calls succeed again, and the books are exact.
import { execFileSync } from 'node:child_process';
import pg from 'pg';
import t from 'tap';
import { startSimulator } from '../../src/simulator/index.js';
import { startGateway } from '../helpers/gateway.js';
import { micros } from '../helpers/money.js';
import { ADMIN_TOKEN, organization, provision } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';
import { proxiedDatabase } from '../helpers/tcp-proxy.js';
import { scrape } from '../ledger/scrape.js';
import { checkBooks, checkHolds } from './lib/books.js';
import { call, type CallResult } from './lib/load.js';

const RESET_MS = 3000;
const RESETS = 3;
const CALLERS = 6;
/** A call that takes longer than this hung: a reset must be answered, not waited out. */
const CALL_LIMIT_MS = 20_000;
/** Every call has ended by then, so no hold has a reason to live this long (a lease is 15 s: a hold that waits for one was lost). */
const HOLDS_GONE_MS = 10_000;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const db = await testDatabase(t);
if (db !== null) {
  t.setTimeout(300_000);
  t.test('PostgreSQL connections reset under traffic: no process exits, calls answered, books exact', async (t) => {
    const { proxy, url } = await proxiedDatabase(db);
    t.teardown(() => proxy.close());
    const sim = await startSimulator({ instances: ['alpha', 'beta'] });
    t.teardown(() => sim.close());
    const gw = await startGateway({
      workers: 2,
      env: { DATABASE_URL: url, SIMULATOR_URL: sim.url, ADMIN_TOKEN, QUOTA_PER_SECOND: '100000', QUOTA_PER_MINUTE: '10000000' },
      timeoutMs: 120_000,
    });
    t.teardown(() => gw.stop());
    // The workers are the primary's child processes (cluster.fork); a replacement would have a new pid.
    const workerPids = (): number[] =>
      execFileSync('ps', ['-o', 'pid=', '--ppid', String(gw.proc.pid)], { encoding: 'utf8' })
        .split('\n')
        .map((s) => Number(s.trim()))
        .filter((n) => n > 0)
        .sort();
    const before = workerPids();
    t.equal(before.length, 2, `two workers started (pids ${before.join(', ')})`);

    const { key, orgId } = await provision(gw.url, { balance: '100.00' });
    const start = micros((await organization(gw.url, orgId)).balance);

    const results: Array<CallResult & { startedAt: number }> = [];
    let running = true;
    const loops = Array.from({ length: CALLERS }, async (_, i) => {
      while (running) {
        const startedAt = Date.now();
        const r = await call(gw.url, key, i % 2 === 0 ? 'chat' : 'chat-stream', 'pg reset [sim:words=20] [sim:delay_ms=5]', undefined, AbortSignal.timeout(CALL_LIMIT_MS));
        results.push({ ...r, startedAt });
        await sleep(r.outcome === 'ok' ? 2 : 30);
      }
    });
    const windows: Array<[number, number]> = [];
    await sleep(1500);
    for (let i = 0; i < RESETS; i++) {
      const at = Date.now();
      proxy.reset(RESET_MS);
      windows.push([at, at + RESET_MS]);
      await sleep(RESET_MS + 2000);
    }
    // After the last reset: traffic goes on until ten calls in a row succeed (the pool reconnects, the journal catches up).
    const backAt = windows[windows.length - 1][1];
    const recovered = await (async () => {
      for (const until = Date.now() + 30_000; Date.now() < until; await sleep(100)) {
        const last = results.filter((r) => r.startedAt >= backAt).slice(-10);
        if (last.length === 10 && last.every((r) => r.outcome === 'ok')) return true;
      }
      return false;
    })();
    running = false;
    await Promise.all(loops);
    // How long holds outlive the resets (the issue saw them released 19–22 s after the store came back, its instance
    // having crashed: a dead instance's holds wait a lease): the ledger's open holds on the operator listener, every
    // 100 ms from the moment traffic stopped. Measured: gone within 0.1 s of it.
    const stoppedAt = Date.now();
    let openHolds = -1;
    for (const until = stoppedAt + HOLDS_GONE_MS; Date.now() < until; await sleep(100)) {
      openHolds = await scrape(gw.opsUrl).then((m) => m.sum('tollgate_ledger_open_holds')).catch(() => -1);
      if (openHolds === 0) break;
    }
    const holdsGoneAt = Date.now();
    t.comment(`the last hold was released ${holdsGoneAt - backAt} ms after the last reset ended, ${holdsGoneAt - stoppedAt} ms after traffic stopped`);
    t.equal(openHolds, 0, `every hold released within ${HOLDS_GONE_MS} ms of the traffic stopping (${holdsGoneAt - stoppedAt} ms)`);
    t.ok(proxy.resets > 0, `the proxy reset ${proxy.resets} sockets`);

    // No process exited: the primary, and the same two workers (a replacement would have a new pid and a 'worker died' line).
    t.equal(gw.proc.exitCode, null, 'the primary still runs');
    const died = gw.logs.filter((l) => l.msg === 'worker died; starting a replacement');
    t.same(died.map((l) => ({ worker: l.worker, code: l.code, signal: l.signal })), [], 'no worker died');
    t.same(gw.proc.exitCode === null ? workerPids() : [], before, 'the same two workers serve');
    const crash = /Unhandled 'error' event|Error: read ECONNRESET\n/.exec(gw.output());
    t.equal(crash && gw.output().slice(Math.max(0, crash.index - 200), crash.index + 1500), null, 'no unhandled error in the output');

    const during = results.filter((r) => windows.some(([a, b]) => r.startedAt >= a && r.startedAt < b));
    const broken = results.filter((r) => r.outcome === 'broken' || r.outcome === 'cut' || r.status === 0);
    t.same(broken.slice(0, 5), [], `every call answered in its envelope (${results.length} calls, ${broken.length} not)`);
    const statuses = new Map<number, number>();
    for (const r of during) statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
    t.ok([...statuses.keys()].every((s) => s === 200 || s === 503), `calls started during the resets: 200 or 503 only (${JSON.stringify(Object.fromEntries(statuses))})`);
    const slowest = Math.max(...results.map((r) => r.ms));
    t.ok(slowest < CALL_LIMIT_MS, `no call hung (slowest ${slowest.toFixed(0)} ms)`);
    t.ok(recovered, 'calls succeed again after the store is back (ten in a row)');
    // What the resets cost callers: per reset, the refusals and how long after its start the last refused call was answered.
    const cost = windows.map(([a, b], i) => {
      const next = windows[i + 1]?.[0] ?? Infinity;
      const mine = results.filter((r) => r.startedAt >= a && r.startedAt < next);
      const refused = mine.filter((r) => r.outcome !== 'ok');
      const lastRefusal = Math.max(0, ...refused.map((r) => r.startedAt + r.ms - a));
      const firstOkAfter = mine.find((r) => r.outcome === 'ok' && r.startedAt >= b);
      return `reset ${i + 1}: ${mine.length} calls, ${refused.length} refused (${[...new Set(refused.map((r) => r.status))].join('/') || '-'}), last refusal ${lastRefusal.toFixed(0)} ms after the reset began (${RESET_MS} ms of resets), first success ${firstOkAfter ? (firstOkAfter.startedAt + firstOkAfter.ms - b).toFixed(0) : '-'} ms after it ended`;
    });
    t.comment(`pg reset ×${RESETS} of ${RESET_MS} ms, ${CALLERS} callers, ${results.length} calls: ${JSON.stringify(Object.fromEntries(statuses))} for those started during resets\n# ${cost.join('\n# ')}`);

    // Books: nothing held once traffic stops, start − end = Σ charges = Σ usage rows.
    const holds = await checkHolds(gw.url, db, 30_000);
    t.equal(holds.leaked, 0, 'no hold left');
    t.same(holds.violations, [], 'the running ledger agrees with the store');
    const books = await checkBooks(db);
    t.same(books.violations, [], `books exact (${books.usageRows} usage rows)`);
    const c = new pg.Client({ connectionString: db });
    await c.connect();
    try {
      const row = (
        await c.query(
          `SELECT (SELECT balance_micros FROM organization_money WHERE id = $1)::text AS balance,
                  (SELECT coalesce(sum(charged_micros), 0) FROM usage_records WHERE org_id = $1)::text AS usage,
                  (SELECT coalesce(-sum(amount_micros), 0) FROM ledger_entries WHERE org_id = $1 AND kind = 'charge')::text AS charges`,
          [orgId],
        )
      ).rows[0];
      const spent = start - Number(row.balance);
      t.ok(spent > 0, `money was spent (${spent} µ)`);
      t.same({ spent, charges: Number(row.charges), usage: Number(row.usage) }, { spent, charges: spent, usage: spent }, 'start − end = Σ charges = Σ usage rows');
    } finally {
      await c.end();
    }
  });
}
