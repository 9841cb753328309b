// /metrics carries what the reliability suite checks (issue 17, "What an
// operator sees"), and each value moves when the thing happens: a hold open
// during a slow stream, settlements waiting for the journal, an overdraft, a
// refusal, a failover and an open circuit, a worker restart, event-loop delay
// and RSS per process. (Shard ownership and takeovers: test/ledger/interrupted.test.ts.)
import t from 'tap';
import { startSimulator } from '../../src/simulator/index.js';
import { startGateway } from '../helpers/gateway.js';
import { ADMIN_TOKEN, provision } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';
import { workerPids } from '../helpers/workers.js';
import { eventually, sleep } from '../e2e/scale-out-helpers.js';
import { scrape } from './scrape.js';

const db = await testDatabase(t);
if (db !== null) {
  const sim = await startSimulator({ instances: ['alpha', 'beta'] });
  const gw = await startGateway({ env: { DATABASE_URL: db, SIMULATOR_URL: sim.url, ADMIN_TOKEN, BILLING_FLUSH_MS: '1500', JOURNAL_MAX_LAG_MS: '5000' }, workers: 2 });
  t.teardown(async () => {
    await gw.stop();
    await sim.close();
  });
  const { key } = await provision(gw.url, { balance: '100.00' });
  const chat = (content: string, extra: object = {}): Promise<Response> =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'nw-swift-1', messages: [{ role: 'user', content }], ...extra }),
    });

  t.test('every name is there from the start', async (t) => {
    const m = await scrape(gw.opsUrl);
    for (const name of [
      'tollgate_ledger_open_holds',
      'tollgate_ledger_held_micros',
      'tollgate_ledger_journal_backlog',
      'tollgate_ledger_journal_flush_lag_seconds',
      'tollgate_ledger_overdraft_micros_total',
      'tollgate_ledger_progress_settlements_total',
      'tollgate_ledger_expired_holds_total',
      'tollgate_supplier_failovers_total',
      'tollgate_worker_restarts_total',
      'tollgate_event_loop_delay_seconds',
      'tollgate_process_resident_memory_bytes',
    ]) {
      t.ok(m.has(name), name);
    }
    t.match(m.text, /# TYPE tollgate_refusals_total counter/);
    t.ok(m.sum('tollgate_process_resident_memory_bytes', 'role="primary"') > 0 && m.sum('tollgate_process_resident_memory_bytes', 'role="worker"') > 0, 'RSS of the primary and the workers');
    t.ok(m.has('tollgate_event_loop_delay_seconds') && m.text.includes('role="worker"'), 'event-loop delay per process');
  });

  t.test('a hold open during a slow stream, then settlements waiting for the journal', async (t) => {
    const call = chat('slow [sim:words=30] [sim:delay_ms=60]', { stream: true }).then((r) => r.text());
    await eventually('the hold shows', async () => (await scrape(gw.opsUrl)).sum('tollgate_ledger_open_holds') >= 1, 1500);
    const during = await scrape(gw.opsUrl);
    t.ok(during.sum('tollgate_ledger_held_micros') > 0, `held: ${during.sum('tollgate_ledger_held_micros')} µ`);
    await call;
    const after = await scrape(gw.opsUrl);
    t.equal(after.sum('tollgate_ledger_open_holds'), 0, 'no hold once it settled');
    t.ok(after.sum('tollgate_ledger_journal_backlog') >= 1, 'its settlement waits for the journal (flush_ms 1500)');
    await sleep(200);
    t.ok((await scrape(gw.opsUrl)).sum('tollgate_ledger_journal_flush_lag_seconds') > 0.1, 'and the lag grows');
    await eventually('the journal is written', async () => (await scrape(gw.opsUrl)).sum('tollgate_ledger_journal_backlog') === 0, 5000);
  });

  t.test('an overdraft, a refusal', async (t) => {
    const before = await scrape(gw.opsUrl);
    const res = await chat('hi [sim:words=2] [sim:input_tokens=900000]', { max_tokens: 8 });
    t.equal(res.status, 200);
    await eventually('the overdraft is counted', async () => (await scrape(gw.opsUrl)).sum('tollgate_ledger_overdraft_micros_total') > before.sum('tollgate_ledger_overdraft_micros_total'), 3000);
    const bad = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: 'Bearer tg_sk_unknownunknownunknownunknownunknownunknown0', 'content-type': 'application/json' }, body: '{}' });
    const code = ((await bad.json()) as { error: { code: string } }).error.code;
    t.equal(bad.status, 401, code);
    const after = await scrape(gw.opsUrl);
    t.equal(after.sum('tollgate_refusals_total', `code="${code}"`) - before.sum('tollgate_refusals_total', `code="${code}"`), 1, `refusals by code (${code})`);
  });

  t.test('failovers and an open circuit', async (t) => {
    const before = (await scrape(gw.opsUrl)).sum('tollgate_supplier_failovers_total');
    // Five failures open the circuit (suppliers.breaker_threshold); two workers: enough calls that one worker sees five.
    for (let i = 0; i < 12; i++) t.equal((await chat('hi [sim:status=503@alpha] [sim:words=2]')).status, 200);
    const m = await scrape(gw.opsUrl);
    t.ok(m.sum('tollgate_supplier_failovers_total') - before >= 5, `failovers counted (${m.sum('tollgate_supplier_failovers_total') - before})`);
    t.ok(m.sum('tollgate_supplier_circuit_open') >= 1, 'a circuit open');
  });

  t.test('a worker restart', async (t) => {
    const workers = new Set(gw.logs.filter((l) => l.role === 'worker').map((l) => l.pid as number));
    const victim = workerPids(gw.proc.pid!).find((p) => workers.has(p))!;
    process.kill(victim, 'SIGKILL');
    await eventually('the restart is counted', async () => (await scrape(gw.opsUrl)).sum('tollgate_worker_restarts_total') === 1, 10_000);
    t.pass('tollgate_worker_restarts_total 1');
  });
}
