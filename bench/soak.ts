// `npm run soak -- --seconds N --rate R`: one gateway (two workers on a fresh
// database of the real PostgreSQL) under mixed traffic on every surface for N
// seconds (1800 by default), with faults injected on a schedule: supplier
// storms, timeouts, streams stalled, reset or malformed, a worker killed with
// SIGKILL, the supplier refusing connections, PostgreSQL's connections reset
// for 3 s (a proxy between the gateway and the store), clients leaving
// mid-call, and with --redis (the ledger on a redis-server the soak starts
// itself) Redis stopped with SIGSTOP for 6 s. At the end: no allotment left
// open once traffic stopped (/metrics), the invariants of the reliability
// suite (test/reliability/lib/, the same checks), RSS sampled through the
// run, a one-screen report also written as JSON and HTML under bench/results/.
// Exit status 1 when an invariant failed.
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { Agent } from 'undici';
import { packageRoot } from '../src/config/paths.js';
import { startSimulator } from '../src/simulator/index.js';
import { startGateway, tempDir } from '../test/helpers/gateway.js';
import { ADMIN_TOKEN, provision, type Provisioned } from '../test/helpers/provision.js';
import { scrape } from '../test/ledger/scrape.js';
import { startRedisServer } from '../test/helpers/redis-server.js';
import { PG_ADMIN_URL } from '../test/helpers/services.js';
import { checkBooks, checkHolds } from '../test/reliability/lib/books.js';
import { startFaultSupplier } from '../test/reliability/lib/fault-supplier.js';
import { proxiedDatabase } from '../test/helpers/tcp-proxy.js';
import { bystanders, call, SURFACES, type Surface } from '../test/reliability/lib/load.js';
import { children, rssSeries } from '../test/reliability/lib/procs.js';
import { Report } from '../test/reliability/lib/report.js';
import { dumpTables, findSecrets, marker } from '../test/reliability/lib/secrets.js';
import { esc } from './svg.js';

function option(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const v = Number(process.argv[i + 1]);
  if (!Number.isFinite(v) || v <= 0 || v > 1e6) throw new Error(`--${name} wants a positive number, not ${process.argv[i + 1]}`);
  return v;
}

const SECONDS = option('seconds', 1800);
const RATE = option('rate', 20);
const WORKERS = option('workers', 2);
/** `--redis`: the ledger on Redis streams, on a redis-server the soak starts (and stalls) itself, instead of the embedded host. */
const ON_REDIS = process.argv.includes('--redis');
/** How long the Redis stall fault stops the soak's redis-server (SIGSTOP): issue 39's 6 s, longer than a reservation's 3 s. */
const REDIS_STALL_MS = 6000;
/** How long after traffic stops every allotment must have gone back (idle 1 s, a sweep, the retirement's way to the actor; a loaded machine's margin). */
const ALLOTMENTS_BACK_MS = 5000;
const MAX_IN_FLIGHT = 64;
const HOLD_LEASE_MS = 3000;
/** billing.hold_max_ms for the soak: every call here lasts seconds, so a hold a minute old is a hold that should be gone. */
const HOLD_MAX_MS = 60_000;
const SAMPLE_MS = 5000;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(Math.random() * xs.length)];

interface Fault {
  name: string;
  /** Written into the faulty share of the calls during the window. */
  directive?: string;
  /** Share of the calls that leave before their answer during the window. */
  abortShare?: number;
  start?: () => Promise<void>;
  end?: () => Promise<void>;
}

async function main(): Promise<number> {
  const dbName = 'tg_soak_' + randomBytes(6).toString('hex');
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  await admin.end();
  const dbUrl = new URL(PG_ADMIN_URL);
  dbUrl.pathname = '/' + dbName;
  const db = dbUrl.toString();

  const sim = await startSimulator({ instances: ['alpha', 'beta', 'gamma'] });
  const faults = await startFaultSupplier(sim.url);
  // The gateway reaches PostgreSQL through a proxy that can reset its connections (issue 39); the books are read directly.
  const pgProxy = await proxiedDatabase(db);
  // Its own redis-server, so that stalling it harms nobody else's Redis.
  const redis = ON_REDIS ? await startRedisServer() : null;
  if (ON_REDIS && redis === null) throw new Error('--redis: redis-server could not be started (is it installed?)');
  const dir = tempDir('tollgate-soak-');
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ billing: { hold_max_ms: HOLD_MAX_MS }, suppliers: { connect_timeout_ms: 1000, headers_timeout_ms: 1500, body_timeout_ms: 1500, breaker_threshold: 5, breaker_cooldown_ms: 3000 } }));
  const gw = await startGateway({
    workers: WORKERS,
    env: {
      DATABASE_URL: pgProxy.url,
      SIMULATOR_URL: faults.url,
      ADMIN_TOKEN,
      TOLLGATE_CONFIG: config,
      HOLD_LEASE_MS: String(HOLD_LEASE_MS),
      QUOTA_PER_SECOND: '100000',
      QUOTA_PER_MINUTE: '10000000',
      STALLED_CLIENT_MS: '3000',
      ...(redis !== null ? { REDIS_URL: redis.url } : {}),
    },
  }).catch(async (err: unknown) => {
    await redis?.stop();
    throw err;
  });
  const report = new Report();
  const keys: string[] = [];
  const markers: string[] = [];
  const dispatcher = new Agent({ connections: MAX_IN_FLIGHT, keepAliveTimeout: 10_000 });
  try {
    const orgs: Provisioned[] = [];
    for (let i = 0; i < 8; i++) orgs.push(await provision(gw.url, { balance: '500.00', name: `soak ${i}` }));
    const bystanderOrg = await provision(gw.url, { balance: '500.00', name: 'soak bystanders' });
    keys.push(...orgs.map((o) => o.key), bystanderOrg.key);

    const rss = rssSeries(() => [gw.proc.pid!]);
    rss.sample();
    const sampler = setInterval(() => rss.sample(), SAMPLE_MS);
    let openHoldsPeak = 0;
    let oldestHoldPeakMs = 0;
    // Holds through the run, from the running ledger's gauges (/metrics): how many, and the oldest's age.
    const holdSampler = setInterval(() => {
      void scrape(gw.opsUrl)
        .then((m) => {
          openHoldsPeak = Math.max(openHoldsPeak, m.sum('tollgate_ledger_open_holds'));
          oldestHoldPeakMs = Math.max(oldestHoldPeakMs, m.sum('tollgate_ledger_oldest_hold_seconds') * 1000);
        })
        .catch(() => {});
    }, SAMPLE_MS);

    let killed = 0;
    const workersBefore = children(gw.proc.pid!).length;
    const schedule: Fault[] = [
      { name: '503 storm on alpha (failover)', directive: '[sim:status=503@alpha]' },
      { name: '429 storm on every supplier', directive: '[sim:status=429]' },
      { name: 'headers timeout on alpha', directive: '[fault:hang@alpha]' },
      { name: 'streams stalled mid-way', directive: '[fault:stall=4]' },
      { name: 'streams reset mid-way', directive: '[fault:reset=4]' },
      { name: 'malformed SSE and bodies', directive: '[fault:badjson] [fault:notjson@beta]' },
      {
        name: 'kill -9 of a worker',
        start: async () => {
          const pids = children(gw.proc.pid!);
          if (pids.length === 0) return;
          process.kill(pick(pids), 'SIGKILL');
          killed++;
        },
      },
      { name: 'supplier refuses connections', start: () => faults.refuse(), end: () => faults.restore() },
      { name: 'PostgreSQL connections reset for 3 s', start: async () => pgProxy.proxy.reset(3000) },
      { name: 'clients leave mid-call', abortShare: 0.5 },
      ...(redis !== null ? [redisStall(redis)] : []),
    ];
    const period = Math.max(6, SECONDS / (schedule.length * 3)) * 1000;
    let current = null as Fault | null;
    let faultyCalls = 0;

    // Open-loop traffic: RATE calls a second whatever the answers do, at most MAX_IN_FLIGHT at once.
    let inFlight = 0;
    let running = true;
    const calls: Array<Promise<void>> = [];
    const traffic = (async () => {
      let next = performance.now();
      while (running) {
        next += 1000 / RATE;
        const wait = next - performance.now();
        if (wait > 0) await sleep(wait);
        if (inFlight >= MAX_IN_FLIGHT) continue;
        const org = pick(orgs);
        const surface: Surface = pick(SURFACES);
        const m = marker('p');
        if (markers.length < 2000) markers.push(m);
        const fault = current;
        const faulty = fault !== null && Math.random() < 0.5;
        if (faulty) faultyCalls++;
        const words = 1 + Math.floor(Math.random() * 40);
        const text = `soak ${m} [sim:words=${words}] [sim:delay_ms=${Math.floor(Math.random() * 15)}] ${faulty && fault?.directive ? fault.directive : ''}`;
        const ac = new AbortController();
        const abortShare = faulty && fault?.abortShare ? fault.abortShare : 0.02;
        const timer = Math.random() < abortShare ? setTimeout(() => ac.abort(), Math.random() * 300) : null;
        inFlight++;
        const p = call(gw.url, org.key, surface, text, dispatcher, ac.signal).then((r) => {
          inFlight--;
          if (timer) clearTimeout(timer);
          report.count(r);
        });
        calls.push(p);
        if (calls.length > 10_000) calls.splice(0, 5000);
      }
    })();

    const started = Date.now();
    const until = started + SECONDS * 1000;
    let round = 0;
    const status = setInterval(() => {
      process.stderr.write(`soak: ${Math.round((Date.now() - started) / 1000)} s of ${SECONDS}, ${report.requests} calls, ${children(gw.proc.pid!).length} workers, fault: ${current?.name ?? 'none'}\n`);
    }, 60_000);
    while (Date.now() + period <= until) {
      const fault = schedule[round++ % schedule.length];
      // Half a period calm, half with the fault; bystanders measure only the fault's half.
      await sleep(period / 2);
      const others = bystanders(gw.url, bystanderOrg.key, 1, ['chat', 'chat-stream', 'messages']);
      await fault.start?.();
      faultyCalls = 0;
      current = fault;
      await sleep(period / 2);
      current = null;
      await fault.end?.();
      const seen = await others.stop();
      const injected = fault.directive || fault.abortShare ? faultyCalls : 1;
      report.fault(fault.name, injected, seen);
    }
    await sleep(Math.max(0, until - Date.now()));
    running = false;
    await traffic;
    await Promise.all(calls);
    clearInterval(status);

    // Workers killed are replaced.
    const replaced = await waitFor(async () => children(gw.proc.pid!).length === workersBefore, 15_000);
    if (!replaced) report.invariantsFailed.push(`workers: ${children(gw.proc.pid!).length} alive after ${killed} kills, ${workersBefore} expected`);
    // Every allotment back once traffic stopped (issue 39: one granted to an ask its worker had given up on stayed
    // held while the worker lived), read from /metrics before any account view, which would recall it.
    let openAllotments = -1;
    const allotmentsBack = await waitFor(async () => (openAllotments = (await scrape(gw.opsUrl)).sum('tollgate_ledger_open_allotments')) === 0, ALLOTMENTS_BACK_MS);
    if (!allotmentsBack) report.invariantsFailed.push(`allotments: ${openAllotments} still open ${ALLOTMENTS_BACK_MS} ms after traffic stopped`);
    const holds = await checkHolds(gw.url, db, HOLD_LEASE_MS * 3 + 5000);
    report.holdsLeaked = holds.leaked;
    report.invariantsFailed.push(...holds.violations);
    const books = await checkBooks(db);
    report.money = books;
    clearInterval(sampler);
    clearInterval(holdSampler);
    if (oldestHoldPeakMs > HOLD_MAX_MS) report.invariantsFailed.push(`a hold ${oldestHoldPeakMs.toFixed(0)} ms old was seen (billing.hold_max_ms ${HOLD_MAX_MS})`);
    rss.sample();
    report.rssFrom(rss.series);
    report.scaleSlopes(SAMPLE_MS);
    // Memory bounded: no process that lived through the second half may keep growing in it.
    const samples = Math.max(...[...rss.series.values()].map((x) => x.length));
    for (const [label, series] of rss.series) {
      const slope = report.rss.get(label)?.secondHalfSlopeMBPerMin;
      const mid = series[Math.floor(series.length / 2)];
      if (series.length === samples && SECONDS >= 600 && slope !== undefined && slope > 2 && series[series.length - 1] > mid * 1.25) {
        report.invariantsFailed.push(`RSS of ${label} rising through the second half: +${slope.toFixed(1)} MB/min`);
      }
    }

    await gw.stop();
    const log = gw.output();
    const leaks = findSecrets(log + '\n' + (await dumpTables(db)), [...keys, ...markers]);
    if (leaks.length > 0) report.invariantsFailed.push(`secrets: ${leaks.length} found in the logs or the store: ${leaks.slice(0, 3).join('; ')}`);

    const title = `soak: ${SECONDS} s at ${RATE} calls/s, ${WORKERS} workers, ledger ${ON_REDIS ? 'on Redis' : 'embedded'}, ${killed} worker kills, peak open holds ${openHoldsPeak}, oldest hold ${(oldestHoldPeakMs / 1000).toFixed(1)} s (max ${HOLD_MAX_MS / 1000} s)`;
    const text = report.render(title);
    process.stdout.write(text + '\n');
    const out = join(packageRoot, 'bench', 'results');
    mkdirSync(out, { recursive: true });
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    const json = { title, seconds: SECONDS, rate: RATE, workers: WORKERS, ledger: ON_REDIS ? 'redis' : 'embedded', worker_kills: killed, open_holds_peak: openHoldsPeak, oldest_hold_ms_peak: oldestHoldPeakMs, hold_max_ms: HOLD_MAX_MS, at: new Date().toISOString(), ...(report.toJSON() as object), rss_series: Object.fromEntries(rss.series) };
    for (const name of [`soak-${stamp}`, 'soak-latest']) {
      writeFileSync(join(out, `${name}.json`), JSON.stringify(json, null, 2));
      writeFileSync(join(out, `${name}.html`), html(title, text, rss.series));
      // The gateway's own log, for what the report cannot say (why a worker died); searched for secrets above.
      writeFileSync(join(out, `${name}.log`), log);
    }
    process.stdout.write(`written: bench/results/soak-${stamp}.json and .html (also soak-latest.*)\n`);
    return report.ok() ? 0 : 1;
  } catch (err) {
    // A soak that could not finish still leaves the gateway's log, which is what says why.
    const out = join(packageRoot, 'bench', 'results');
    mkdirSync(out, { recursive: true });
    writeFileSync(join(out, 'soak-failed.log'), gw.output());
    process.stderr.write(`soak: the gateway's log is in bench/results/soak-failed.log\n`);
    throw err;
  } finally {
    await dispatcher.close().catch(() => {});
    await gw.stop().catch(() => {});
    await faults.close();
    await pgProxy.proxy.close();
    if (redis !== null) {
      redis.resume();
      await redis.stop();
    }
    await sim.close();
    const c = new pg.Client({ connectionString: PG_ADMIN_URL });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    await c.end();
  }
}

/**
 * Redis stopped (SIGSTOP) for REDIS_STALL_MS, resumed by itself even if the
 * fault's half period is shorter: the end waits for it.
 */
function redisStall(redis: { pause(): void; resume(): void }): Fault {
  let resumed: Promise<void> = Promise.resolve();
  return {
    name: `Redis stopped (SIGSTOP) for ${REDIS_STALL_MS / 1000} s`,
    start: async () => {
      redis.pause();
      resumed = sleep(REDIS_STALL_MS).then(() => redis.resume());
    },
    end: () => resumed,
  };
}

async function waitFor(probe: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await probe()) return true;
    await sleep(200);
  }
  return probe();
}

/** The report as a page: the one-screen text and one RSS line per process. */
function html(title: string, text: string, series: Map<string, number[]>): string {
  const W = 720;
  const H = 220;
  const max = Math.max(1, ...[...series.values()].flat());
  const lines = [...series].map(([label, s], i) => {
    const pts = s.map((v, j) => `${((j / Math.max(1, s.length - 1)) * W).toFixed(1)},${(H - (v / max) * H).toFixed(1)}`).join(' ');
    const color = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#b07aa1'][i % 6];
    return `<polyline fill="none" stroke="${color}" stroke-width="1.5" points="${pts}"><title>${esc(label)}</title></polyline><text x="4" y="${14 + i * 14}" fill="${color}" font-size="11">${esc(label)}</text>`;
  });
  return `<!doctype html><meta charset="utf-8"><title>${esc(title)}</title>
<body style="font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto">
<h1 style="font-size:1.2rem">${esc(title)}</h1>
<pre style="background:#f6f6f6;padding:1rem;overflow:auto">${esc(text)}</pre>
<h2 style="font-size:1rem">Resident memory per process (peak ${(max / 1048576).toFixed(0)} MB, sampled every ${SAMPLE_MS / 1000} s)</h2>
<svg width="${W}" height="${H}" style="border:1px solid #ccc">${lines.join('')}</svg>
</body>`;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`soak failed: ${(err as Error).stack}\n`);
    process.exit(2);
  },
);
