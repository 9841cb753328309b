// What every file of the reliability suite starts with: a fresh database on
// the real PostgreSQL, a simulator behind the fault supplier, a gateway on
// them; and the invariants asserted after each scenario. Test-only (tap).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import type { Test } from 'tap';
import { startSimulator, type Simulator, type SimulatorEvent } from '../../../src/simulator/index.js';
import { startGateway, tempDir, type Gateway } from '../../helpers/gateway.js';
import { ADMIN_TOKEN, provision, type Provisioned } from '../../helpers/provision.js';
import { testDatabase } from '../../helpers/services.js';
import { checkBooks, checkHolds, missingRows } from './books.js';
import { startFaultSupplier, type FaultSupplier } from './fault-supplier.js';
import { bystanders, type BystanderStats, type Surface } from './load.js';
import { Report } from './report.js';

export interface Rig {
  db: string;
  sim: Simulator;
  events: SimulatorEvent[];
  faults: FaultSupplier;
  gw: Gateway;
  report: Report;
  /** Organizations and keys made for this file (their secrets are searched for at the end). */
  keys: string[];
  org(balance?: string): Promise<Provisioned>;
}

export interface RigOptions {
  workers?: number;
  env?: Record<string, string>;
  /** Merged into the gateway's config file (TOLLGATE_CONFIG). */
  config?: Record<string, unknown>;
}

/** Null when PostgreSQL is not there (the file is then skipped with the reason printed). */
export async function startRig(t: Test, opts: RigOptions = {}): Promise<Rig | null> {
  const db = await testDatabase(t);
  if (db === null) return null;
  const sim = await startSimulator({ instances: ['alpha', 'beta', 'gamma'] });
  const events: SimulatorEvent[] = [];
  sim.on((e) => events.push(e));
  const faults = await startFaultSupplier(sim.url);
  const dir = tempDir('tollgate-reliability-');
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify(opts.config ?? {}));
  const gw = await startGateway({
    workers: opts.workers ?? 1,
    env: { DATABASE_URL: db, SIMULATOR_URL: faults.url, ADMIN_TOKEN, BILLING_FLUSH_MS: '0', TOLLGATE_CONFIG: config, QUOTA_PER_SECOND: '100000', QUOTA_PER_MINUTE: '10000000', COUNT_TOKENS_PER_SECOND: '100000', COUNT_TOKENS_PER_MINUTE: '10000000', ...opts.env },
  });
  const report = new Report();
  const keys: string[] = [];
  t.teardown(async () => {
    await gw.stop();
    await faults.close();
    await sim.close();
    t.comment(report.render(`reliability: ${t.name}`));
  });
  return {
    db,
    sim,
    events,
    faults,
    gw,
    report,
    keys,
    async org(balance = '10.00') {
      const p = await provision(gw.url, { balance });
      keys.push(p.key);
      return p;
    },
  };
}

/**
 * Runs `fault` with bystanders calling beside it, then asserts the invariants:
 * the other clients were served, the books balance to the micro, no hold left
 * open once the traffic stopped (within `holdWaitMs`), the live ledger agrees
 * with the store.
 */
export async function scenario(t: Test, rig: Rig, name: string, fault: () => Promise<void>, opts: { holdWaitMs?: number; maxBystanderErrorShare?: number; gatewayUrl?: string; surfaces?: Surface[] } = {}): Promise<BystanderStats> {
  const url = opts.gatewayUrl ?? rig.gw.url;
  const { key } = await rig.org('50.00');
  const others = bystanders(url, key, 2, opts.surfaces);
  let seen: BystanderStats;
  try {
    await fault();
  } finally {
    seen = await others.stop();
  }
  rig.report.fault(name, 1, seen);
  t.ok(seen.sent > 0, `${name}: the other clients made ${seen.sent} calls`);
  t.ok(seen.errors <= (opts.maxBystanderErrorShare ?? 0) * seen.sent, `${name}: the other clients were served (${seen.errors} errors of ${seen.sent}, p99 ${seen.p99.toFixed(0)} ms)`, { samples: seen.samples });
  await assertBooks(t, rig, name, url, opts.holdWaitMs);
  return seen;
}

export async function assertBooks(t: Test, rig: Rig, name: string, url = rig.gw.url, holdWaitMs = 5000): Promise<void> {
  const holds = await checkHolds(url, rig.db, holdWaitMs);
  const books = await checkBooks(rig.db);
  rig.report.money = { orgs: books.orgs, usageRows: books.usageRows, chargedMicros: books.chargedMicros, violations: [...rig.report.money.violations, ...books.violations] };
  rig.report.holdsLeaked += holds.leaked;
  t.equal(holds.leaked, 0, `${name}: holds leaked: ${holds.leaked}`);
  t.same(holds.violations, [], `${name}: the running ledger agrees with the store`);
  t.same(books.violations, [], `${name}: books exact for ${books.orgs} organizations (${books.usageRows} usage rows)`);
}

/** After a storm on several instances: no hold left after the leases, books exact, every answered call with its usage row. */
export async function assertStormBooks(t: Test, gatewayUrl: string, db: string, answered: string[], holdWaitMs: number): Promise<void> {
  const holds = await checkHolds(gatewayUrl, db, holdWaitMs);
  t.equal(holds.leaked, 0, `holds leaked: ${holds.leaked}`);
  t.same(holds.violations, [], 'the running ledger agrees with the store');
  const books = await checkBooks(db);
  t.same(books.violations, [], `books exact (${books.usageRows} usage rows)`);
  t.same(await missingRows(db, answered), [], `every one of the ${answered.length} answered calls has its usage row`);
}

/** The usage row of a request, from the store, once written (settlements are flushed asynchronously). */
export async function rowOf(rig: Rig, requestId: string | null): Promise<any> {
  if (requestId === null) throw new Error('no request id: the call got no answer');
  const c = new pg.Client({ connectionString: rig.db });
  await c.connect();
  try {
    for (let i = 0; i < 50; i++) {
      const { rows } = await c.query('SELECT supplier, outcome, charged_micros::int8::text AS charged, output_tokens::text AS output, total_ms FROM usage_records WHERE request_id = $1', [requestId]);
      if (rows.length > 0) return { ...rows[0], charged: Number(rows[0].charged), output: Number(rows[0].output) };
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await c.end();
  }
  throw new Error(`no usage row for ${requestId}`);
}

/** The request id of an organization's only (or latest) call, for a call whose answer the client never read. */
export async function lastRequestId(rig: Rig, orgId: string): Promise<string> {
  const c = new pg.Client({ connectionString: rig.db });
  await c.connect();
  try {
    for (let i = 0; i < 50; i++) {
      const { rows } = await c.query('SELECT request_id FROM usage_records WHERE org_id = $1 ORDER BY finished_at DESC LIMIT 1', [orgId]);
      if (rows.length > 0) return String(rows[0].request_id);
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await c.end();
  }
  throw new Error(`no usage row for organization ${orgId}`);
}
