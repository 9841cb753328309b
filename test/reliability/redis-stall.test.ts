// Issue 39, fault 2, the way it was seen: two instances (two workers each)
// sharing PostgreSQL and a Redis-streams ledger, a spend storm whose
// reservations ask for allotments, and Redis stopped with SIGSTOP for 6 s. A
// reservation that asks for an allotment while Redis is stopped is given up by
// its worker (the command times out: 503), yet reaches the shard's owner when
// Redis resumes, before its deadline; the owner grants the allotment and
// nobody reads the answer. Before the fix that allotment stayed open while its
// worker lived: its money held (the console's `held` with no open hold), a
// call for what the account had free refused 402, /metrics showing an open
// allotment minutes later.
//
// The redis-server is this file's own (test/e2e/scale-out-helpers.ts ownRedis),
// so SIGSTOP harms nobody else's. Besides the storm, waves of calls from fresh
// organizations (each one's first call asks for an allotment) are sent 3.0–4.0 s
// into the stall, so that their deadlines (+3 s) fall just after the resume:
// the window the fault needs. Then: no process exited, no allotment open a few
// seconds after the storm stopped (/metrics on each instance's operator
// listener, read before any account view, which would recall them), nothing
// held, a call priced at nearly all of each organization's balance admitted
// (no false 402), every answered call charged once, books exact.
// Measured and printed: the 503s of the stall, and how long after Redis
// returned each instance answered its first call and its first account view.
import pg from 'pg';
import t, { type Test } from 'tap';
import { startSimulator } from '../../src/simulator/index.js';
import { eventually, ownRedis, redisFor, sleep, startInstances, waitForSpread } from '../e2e/scale-out-helpers.js';
import type { Gateway } from '../helpers/gateway.js';
import { micros } from '../helpers/money.js';
import { organization, provision, type Provisioned } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';
import { scrape } from '../ledger/scrape.js';
import { checkBooks, checkHolds, missingRows } from './lib/books.js';
import { call, percentile, type CallResult } from './lib/load.js';
import { children } from './lib/procs.js';

const STALL_MS = 6000;
/** When, into the stall, each wave of first calls is sent: their reservations' deadlines (+3 s) fall 0–1 s after the resume. */
const WAVES_MS = Array.from({ length: 11 }, (_, i) => 3000 + i * 100);
/** Fresh organizations per wave and instance. */
const WAVE_ORGS = 2;
const STORM_ORGS = 3;
const CALLERS = 3;
const BALANCE = '0.50';
/** How long after the storm stops its allotments may take to go back: idle 1 s (allotments.ts IDLE_MS), a sweep, the retirement's way to the owner; a busy machine's margin. */
const ALLOTMENTS_BACK_MS = 5000;
/** The longest the storm goes on after the resume waiting for each instance to answer a call again. */
const RECOVERY_MS = 10_000;
/** A call that takes longer than this hung. */
const CALL_LIMIT_MS = 20_000;

/** au-atlas-2's prices (config/catalog.seed.json), µ per token × 10^6, and its output ceiling. */
const ATLAS = { inputPerMtok: 2_500_000, outputPerMtok: 10_000_000, maxOutput: 65_536 };

interface Timed extends CallResult {
  gateway: number;
  startedAt: number;
  endedAt: number;
}

async function timedCall(gateways: Gateway[], i: number, key: string, surface: 'chat' | 'chat-stream', text: string): Promise<Timed> {
  const startedAt = Date.now();
  const r = await call(gateways[i].url, key, surface, text, undefined, AbortSignal.timeout(CALL_LIMIT_MS));
  return { ...r, gateway: i, startedAt, endedAt: Date.now() };
}

/**
 * One chat call of au-atlas-2 whose bound (its body's ~100 bytes as input at
 * 2.5 µ, and max_tokens at 10 µ) falls 20–30 µ short of `balance`: far less
 * than an allotment of 32 small calls holds (~1,800 µ), so a stranded one
 * makes it 402 (the gateway's refusal names the same bound).
 */
async function callForNearlyAll(gw: Gateway, key: string, balance: number): Promise<{ status: number; bound: number; requestId: string | null; body: string }> {
  const shape = (maxTokens: number): string => JSON.stringify({ model: 'au-atlas-2', max_tokens: maxTokens, messages: [{ role: 'user', content: 'all of it [sim:words=2]' }] });
  const inputMicros = Math.ceil((Buffer.byteLength(shape(ATLAS.maxOutput)) * ATLAS.inputPerMtok) / 1e6);
  const maxTokens = Math.min(ATLAS.maxOutput, Math.floor((balance - inputMicros - 20) / (ATLAS.outputPerMtok / 1e6)));
  const body = shape(maxTokens);
  const bound = Math.ceil((Buffer.byteLength(body) * ATLAS.inputPerMtok + maxTokens * ATLAS.outputPerMtok) / 1e6);
  const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(CALL_LIMIT_MS) });
  return { status: res.status, bound, requestId: res.headers.get('x-request-id'), body: await res.text() };
}

/** Open allotments and held micros on each instance, from its operator listener's /metrics (no account view: that would recall them). */
async function ledgerGauges(gateways: Gateway[]): Promise<Array<{ allotments: number; held: number }>> {
  return Promise.all(
    gateways.map(async (gw) => {
      const m = await scrape(gw.opsUrl);
      return { allotments: m.sum('tollgate_ledger_open_allotments'), held: m.sum('tollgate_ledger_held_micros') };
    }),
  );
}

/** For these organizations: start − end, Σ charges in the journal, Σ usage rows' charges, all in µ. */
async function spentOf(db: string, orgIds: string[]): Promise<{ spent: number; charges: number; usage: number }> {
  const c = new pg.Client({ connectionString: db });
  await c.connect();
  try {
    const row = (
      await c.query(
        `SELECT (SELECT coalesce(sum(balance_micros), 0) FROM organization_money WHERE id = ANY($1))::text AS balance,
                (SELECT coalesce(sum(charged_micros), 0) FROM usage_records WHERE org_id = ANY($1))::text AS usage,
                (SELECT coalesce(-sum(amount_micros), 0) FROM ledger_entries WHERE org_id = ANY($1) AND kind = 'charge')::text AS charges`,
        [orgIds],
      )
    ).rows[0];
    return { spent: orgIds.length * micros(BALANCE) - Number(row.balance), charges: Number(row.charges), usage: Number(row.usage) };
  } finally {
    await c.end();
  }
}

async function assertNoProcessExited(t: Test, gateways: Gateway[], workersBefore: number[][]): Promise<void> {
  for (const [i, gw] of gateways.entries()) {
    t.equal(gw.proc.exitCode, null, `instance ${i}: the primary still runs`);
    t.same(children(gw.proc.pid!), workersBefore[i], `instance ${i}: the same two workers serve`);
    t.same(gw.logs.filter((l) => l.msg === 'worker died; starting a replacement').map((l) => ({ worker: l.worker, code: l.code, signal: l.signal })), [], `instance ${i}: no worker died`);
    const crash = /Unhandled 'error' event/.exec(gw.output());
    t.equal(crash && gw.output().slice(Math.max(0, crash.index - 200), crash.index + 1500), null, `instance ${i}: no unhandled error in the output`);
  }
}

const redis = await ownRedis(t);
const db = redis === null ? null : await testDatabase(t);
if (redis !== null && db !== null) {
  t.setTimeout(180_000);
  t.test('Redis stopped 6 s under a storm whose reservations ask for allotments, two instances: no allotment stranded, no false 402, books exact', async (t) => {
    const sim = await startSimulator({ instances: ['alpha', 'beta', 'gamma'] });
    t.teardown(() => sim.close());
    // The default hold lease (15 s), as in the issue: longer than the stall, so holds and allotments outlive it unless retired.
    const gateways = await startInstances(t, 2, { DATABASE_URL: db, REDIS_URL: redis.url, SIMULATOR_URL: sim.url, QUOTA_PER_SECOND: '100000', QUOTA_PER_MINUTE: '10000000' }, 2);
    await waitForSpread(redisFor(t, redis.url), db, gateways);
    const workersBefore = gateways.map((gw) => children(gw.proc.pid!));
    t.same(workersBefore.map((w) => w.length), [2, 2], `two workers per instance (${JSON.stringify(workersBefore)})`);

    // Storm organizations (called through both instances), a console organization (read through both after the resume),
    // and fresh organizations for the waves, each made on the instance that will call it.
    const storm = await Promise.all(Array.from({ length: STORM_ORGS }, () => provision(gateways[0].url, { balance: BALANCE })));
    const consoleOrg = await provision(gateways[0].url, { balance: BALANCE });
    const waves: Provisioned[][][] = [];
    for (const _ of WAVES_MS) waves.push(await Promise.all(gateways.map((gw) => Promise.all(Array.from({ length: WAVE_ORGS }, () => provision(gw.url, { balance: BALANCE }))))));
    for (const o of storm) await eventually('the storm keys reach both instances', async () => (await fetch(`${gateways[1].url}/v1/key`, { headers: { authorization: `Bearer ${o.key}` } })).status === 200);
    const allOrgs = [...storm, consoleOrg, ...waves.flat(2)];
    const keyOf = new Map(allOrgs.map((o) => [o.orgId, o.key]));

    const results: Timed[] = [];
    const waveResults: Timed[] = [];
    let running = true;
    const loops = gateways.flatMap((_, g) =>
      Array.from({ length: CALLERS }, async (_, i) => {
        for (let n = i; running; n++) {
          const r = await timedCall(gateways, g, storm[n % storm.length].key, n % 2 === 0 ? 'chat' : 'chat-stream', 'storm [sim:words=20] [sim:delay_ms=5]');
          results.push(r);
          if (r.outcome !== 'ok') await sleep(30);
        }
      }),
    );
    await sleep(2000);
    redis.pause();
    const pausedAt = Date.now();
    const waveCalls = WAVES_MS.map(async (at, w) => {
      await sleep(pausedAt + at - Date.now());
      const sent = await Promise.all(waves[w].flatMap((orgs, g) => orgs.map((o) => timedCall(gateways, g, o.key, 'chat', 'wave [sim:words=3]'))));
      results.push(...sent);
      waveResults.push(...sent);
    });
    await sleep(pausedAt + STALL_MS - Date.now());
    redis.resume();
    const resumedAt = Date.now();

    // From the resume: each instance's first account answer (the console organization's: no wave's or storm's
    // allotment is recalled by it), and both instances' open allotments every 100 ms.
    const firstAccount = gateways.map(async (gw) => {
      while (Date.now() - resumedAt < 15_000) {
        if ((await organization(gw.url, consoleOrg.orgId).catch(() => null)) !== null) return Date.now() - resumedAt;
        await sleep(50);
      }
      return -1;
    });
    const allotmentLine: string[] = [];
    let sampling = true;
    const sampler = (async () => {
      let last = '';
      while (sampling) {
        const now = (await ledgerGauges(gateways).catch(() => null))?.map((g) => g.allotments).join('+') ?? '?';
        if (now !== last) allotmentLine.push(`${Date.now() - resumedAt} ms: ${now}`);
        last = now;
        await sleep(100);
      }
    })();
    // The storm goes on 2 s after the resume, and until each instance has answered a call sent after it: service
    // comes back 0.1–3.1 s after Redis does (the owners' next lease renewal, README "Redis unreachable"), so a
    // fixed window raced it on a loaded machine. At most RECOVERY_MS: past it the assertion below fails.
    const answeredAgain = (g: number): boolean => results.some((r) => r.gateway === g && r.outcome === 'ok' && r.startedAt >= resumedAt);
    await sleep(2000);
    while (Date.now() - resumedAt < RECOVERY_MS && !gateways.every((_, g) => answeredAgain(g))) await sleep(100);
    running = false;
    await Promise.all([...loops, ...waveCalls]);
    const stoppedAt = Date.now();

    // No allotment left open once the storm has stopped and its allotments have gone idle.
    let gauges = await ledgerGauges(gateways);
    while (Date.now() - stoppedAt < ALLOTMENTS_BACK_MS && gauges.some((g) => g.allotments > 0 || g.held > 0)) {
      await sleep(100);
      gauges = await ledgerGauges(gateways);
    }
    const backMs = Date.now() - stoppedAt;
    sampling = false;
    await sampler;
    t.comment(`open allotments per instance after the resume: ${allotmentLine.join(', ')} (the storm stopped at ${stoppedAt - resumedAt} ms)`);
    t.same(gauges.map((g) => g.allotments), [0, 0], `no allotment open on either instance ${backMs} ms after the storm stopped (${stoppedAt + backMs - resumedAt} ms after Redis resumed)`);
    t.same(gauges.map((g) => g.held), [0, 0], 'nothing held on either instance');

    const firstAccountMs = await Promise.all(firstAccount);
    const during = results.filter((r) => r.startedAt >= pausedAt && r.startedAt < resumedAt);
    const statuses = (rs: Timed[]): string => JSON.stringify(rs.reduce<Record<number, number>>((m, r) => ((m[r.status] = (m[r.status] ?? 0) + 1), m), {}));
    const firstCall = gateways.map((_, g) => {
      const ok = results.filter((r) => r.gateway === g && r.outcome === 'ok' && r.startedAt >= resumedAt).map((r) => r.endedAt - resumedAt);
      return ok.length === 0 ? -1 : Math.min(...ok);
    });
    const refusedMs = during.filter((r) => r.status === 503).map((r) => r.ms);
    t.comment(
      `Redis stopped ${resumedAt - pausedAt} ms; ${results.length} calls in all, ${during.length} started during the stall: ${statuses(during)} (of them ${waveResults.length} sent 3.0–4.0 s in: ${statuses(waveResults)}); ` +
        `a 503 took ${Math.min(...refusedMs).toFixed(0)}–${Math.max(...refusedMs).toFixed(0)} ms (median ${percentile(refusedMs, 50).toFixed(0)}); after Redis returned, the first answered call came ${firstCall.join(' / ')} ms later and the first account answer ${firstAccountMs.join(' / ')} ms later (instance 0 / 1)`,
    );
    t.ok(firstCall.every((ms) => ms >= 0) && firstAccountMs.every((ms) => ms >= 0), 'both instances answer calls and account views again');

    await assertNoProcessExited(t, gateways, workersBefore);
    const notAnswered = results.filter((r) => r.outcome === 'broken' || r.outcome === 'cut');
    t.same(notAnswered.slice(0, 5), [], `every call answered in its envelope (${results.length} calls, ${notAnswered.length} not)`);
    t.same(results.filter((r) => r.status === 402).slice(0, 5), [], `no call refused 402 (${BALANCE} in each account)`);
    t.ok(during.some((r) => r.status === 503), 'the stall was felt: calls refused 503 while Redis was stopped');

    // Each account as its console shows it: nothing held (no call is in progress); then a call priced at nearly all
    // of its balance is admitted (the false 402: a bound of 0.497728 refused with 0.498231 in the account).
    const views = await Promise.all(allOrgs.map(async (o) => ({ org: o, view: await organization(gateways[0].url, o.orgId) })));
    const heldSomewhere = views.filter(({ view }) => micros(view.held) !== 0 || Number(view.open_holds) !== 0).map(({ org, view }) => `${org.orgId.slice(0, 8)}: held ${view.held}, ${view.open_holds} open holds`);
    t.same(heldSomewhere, [], 'the console shows nothing held in any organization');
    const refusals: string[] = [];
    const probes: string[] = [];
    for (let i = 0; i < views.length; i += 8) {
      await Promise.all(
        views.slice(i, i + 8).map(async ({ org, view }, j) => {
          const balance = micros(view.balance);
          const r = await callForNearlyAll(gateways[(i + j) % 2], keyOf.get(org.orgId)!, balance);
          if (r.status === 200) probes.push(r.requestId!);
          else refusals.push(`${org.orgId.slice(0, 8)}: ${r.status} for a bound of ${r.bound} µ with ${balance} µ in the account: ${r.body.slice(0, 200)}`);
        }),
      );
    }
    t.same(refusals, [], `a call priced at nearly all the balance is admitted in each of the ${views.length} organizations (no false 402)`);

    // Books: no hold left, the running ledger equal to the store, every answered call with its one usage row, start − end = Σ charges = Σ usage rows.
    const holds = await checkHolds(gateways[0].url, db, 20_000);
    t.equal(holds.leaked, 0, 'no hold left');
    t.same(holds.violations, [], 'the running ledger agrees with the store');
    const books = await checkBooks(db);
    t.same(books.violations, [], `books exact (${books.usageRows} usage rows; one charge entry per charged row)`);
    const answered = [...results.filter((r) => r.outcome === 'ok').map((r) => r.requestId!), ...probes];
    let missing = answered;
    for (const until = Date.now() + 5000; missing.length > 0 && Date.now() < until; await sleep(100)) missing = await missingRows(db, missing);
    t.same(missing, [], `every one of the ${answered.length} answered calls has its usage row`);
    const money = await spentOf(db, allOrgs.map((o) => o.orgId));
    t.ok(money.spent > 0, `money was spent (${money.spent} µ)`);
    t.same(money, { spent: money.spent, charges: money.spent, usage: money.spent }, 'start − end = Σ charges = Σ usage rows');
  });
}
