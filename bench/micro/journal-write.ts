// What one settled call costs the primary when its usage row and charge go to
// the store: the journal's batched write (one multi-row statement per flush),
// on an embedded PostgreSQL started for the run. Reports, per batch size, the
// primary's CPU per row (this process only: building the JSON text, pg's
// encoding, the reply) and the server's CPU per row (every PostgreSQL process).
// With --parts, a worker's batch instead (writeWriterBatch: COPY, then its
// parts of the balances, in one transaction). --rows N: rows per size (4,000).
// Run: npm run build && node dist/bench/micro/journal-write.js [--parts] [--rows N] [rows-per-flush ...]
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOrganization } from '../../src/organizations/store.js';
import type { UsageRow } from '../../src/ledger/protocol.js';
import { PgLedgerStore, type SettledRow } from '../../src/ledger/store.js';
import { openEmbeddedStore } from '../../src/store/embedded.js';
import { migrate } from '../../src/store/migrate.js';
import { createPool } from '../../src/store/pool.js';

const TICK_MS = 10;

/** CPU ms of `root` and all its descendants (the server and its backends). */
function treeCpuMs(root: number): number {
  let total = 0;
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'latin1');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(name) === root || Number(f[1]) === root) total += (Number(f[11]) + Number(f[12])) * TICK_MS;
    } catch {
      /* gone */
    }
  }
  return total;
}

function row(orgId: string, requestId: string): SettledRow {
  return {
    usage: {
      requestId, orgId, keyId: randomUUID(), modelId: randomUUID(), supplier: 'alpha', surface: 'chat_completions', funding: 'balance',
      inputTokens: 42, cachedInputTokens: 0, outputTokens: 16, imageUnits: 0, reservedMicros: 25_000, chargedMicros: 17,
      outcome: 'completed', meteredSource: 'supplier', holdExpired: false, ttfbMs: 3, totalMs: 5, finishedAt: Date.now(), overdraftMicros: 0,
    } as UsageRow,
    writer: 'bench', // with its charge entry, as a settlement's
  };
}

const args = process.argv.slice(2);
const parts = args.includes('--parts');
const rowsPerSize = args.includes('--rows') ? Number(args[args.indexOf('--rows') + 1]) : 4000;
const sizes = args.filter((a, i) => /^\d+$/.test(a) && args[i - 1] !== '--rows').map(Number).filter((n) => n > 0);
const dir = mkdtempSync(join(tmpdir(), 'tollgate-journal-bench-'));
const store = await openEmbeddedStore(dir, { maxConnections: 16 });
const pool = createPool(store.url, 2);
try {
  await migrate(pool);
  const orgs = await Promise.all(Array.from({ length: 8 }, async () => (await createOrganization(pool, randomUUID(), 'bench', 1e12)).id));
  const ledger = new PgLedgerStore(pool);
  let seq = 0;
  let batchSeq = 0;
  const write = (b: SettledRow[]): Promise<unknown> => (parts ? ledger.writeWriterBatch(b, 'bench', ++batchSeq, true) : ledger.writeBatch(b, true)); // a first attempt, as the journal's and a worker's
  for (const perFlush of sizes.length > 0 ? sizes : [1, 10, 100, 500]) {
    const flushes = Math.max(20, Math.round(rowsPerSize / perFlush));
    const batch = (): ReturnType<typeof row>[] => Array.from({ length: perFlush }, () => row(orgs[seq % orgs.length], `req_bench_${++seq}`));
    for (let i = 0; i < 5; i++) {
      const b = batch();
      await write(b);
    }
    const cpu0 = process.cpuUsage();
    const server0 = treeCpuMs(store.pid);
    const t0 = performance.now();
    for (let i = 0; i < flushes; i++) {
      const b = batch();
      await write(b);
    }
    const wall = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const server = treeCpuMs(store.pid) - server0;
    const rows = flushes * perFlush;
    process.stdout.write(
      `${String(perFlush).padStart(4)} rows/flush: primary ${(((cpu.user + cpu.system) / rows)).toFixed(1).padStart(6)} µs/row, ` +
        `server ${((server * 1000) / rows).toFixed(1).padStart(6)} µs/row, ${(wall / flushes).toFixed(2)} ms/flush\n`,
    );
  }
} finally {
  await pool.end();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
