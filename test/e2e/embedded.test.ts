// The embedded default: no DATABASE_URL, no REDIS_URL. A real PostgreSQL
// server under DATA_DIR, started and owned by the primary, shared by several
// workers; a second start reuses it; a crash of the primary (kill -9) leaves
// no server behind and the next start recovers whatever was left.
import { chmodSync, lstatSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { pidAlive } from '../../src/store/data-lock.js';
import { clusterPath, openEmbeddedStore, runningEmbeddedStore } from '../../src/store/embedded.js';
import { findBinaries, serverUser, startServer } from '../../src/store/pg-server.js';
import { startGateway, tempDir, type Gateway } from '../helpers/gateway.js';

const dataDir = tempDir('tollgate-embedded-');
t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
const WORKERS = 2;

/** Spawn → the first 200 on GET /v1/models, in ms. */
async function timedStart(): Promise<{ gw: Gateway; ms: number }> {
  const started = performance.now();
  const gw = await startGateway({ dataDir, workers: WORKERS });
  const res = await fetch(`${gw.url}/v1/models`);
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`GET /v1/models answered ${res.status}`);
  return { gw, ms: Math.round(performance.now() - started) };
}

const postmasterPid = (): number => Number(readFileSync(join(clusterPath(dataDir), 'postmaster.pid'), 'utf8').split('\n')[0]);

function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

async function until(what: string, pred: () => boolean, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

t.test('first start creates the store, migrates, seeds, serves the demo catalog', async (t) => {
  const { gw, ms } = await timedStart();
  t.comment(`first start: GET /v1/models answered ${ms} ms after the spawn (initdb included)`);
  t.ok(ms < 15_000, `first start ${ms} ms (target < 5 s on an idle machine; bound generous for a shared one)`);
  const listening = gw.logs.find((l) => l.msg === 'listening')!;
  t.equal(listening.store, 'embedded');
  t.equal(listening.workers, WORKERS);
  t.ok(listening.migrations.length >= 2, 'migrations applied');
  t.equal(listening.seeded, true);
  const body: any = await (await fetch(`${gw.url}/v1/models`)).json();
  t.equal(body.catalog_revision, 1);
  t.ok(body.data.some((m: any) => m.id === 'nw-swift-1'));

  // What runs and where: a PostgreSQL child of the primary, reachable only through a socket in its 0700 directory.
  const pg = postmasterPid();
  t.equal(parentOf(pg), gw.proc.pid, 'the server is a child process of the primary');
  t.equal(statSync(join(dataDir, 'postgres.password')).mode & 0o777, 0o600, 'the password file is 0600');
  t.equal(statSync(clusterPath(dataDir)).mode & 0o777, 0o700, 'the cluster directory is 0700');
  const running = runningEmbeddedStore(dataDir)!;
  t.match(running.url, /^postgres:\/\/postgres:[^@]+@%2F/, 'a Unix socket, no TCP port');
  t.equal(running.pid, gw.proc.pid);
  const lines = readFileSync(join(clusterPath(dataDir), 'postmaster.pid'), 'utf8').split('\n');
  t.equal(lines[5].trim(), '', 'listen_addresses is empty: no TCP listener');
  t.notOk(gw.output().includes(readFileSync(join(dataDir, 'postgres.password'), 'utf8').trim()), 'the password is never logged');

  t.equal(await gw.stop(), 0, 'SIGTERM exits 0');
  t.notOk(pidAlive(pg), 'and the server stopped with it');
  t.match(readFileSync(join(dataDir, 'postgres.log'), 'utf8'), /database system is shut down/, 'a clean shutdown');
});

t.test('a second start reuses the data: nothing migrated or seeded again', async (t) => {
  const { gw, ms } = await timedStart();
  t.comment(`restart: GET /v1/models answered ${ms} ms after the spawn`);
  t.ok(ms < 8000, `restart ${ms} ms (target < 2 s on an idle machine; bound generous for a shared one)`);
  const listening = gw.logs.find((l) => l.msg === 'listening')!;
  t.same(listening.migrations, []);
  t.equal(listening.seeded, false);
  const body: any = await (await fetch(`${gw.url}/v1/models`)).json();
  t.equal(body.catalog_revision, 1);
  t.equal(body.data.length, 5);
  t.equal(await gw.stop(), 0);
});

t.test('a second gateway on the same data directory is refused', async (t) => {
  const gw = await startGateway({ dataDir, workers: WORKERS });
  await t.rejects(startGateway({ dataDir, timeoutMs: 20_000 }), /in use by process/);
  await gw.stop();
});

t.test('kill -9 of the primary: its PostgreSQL does not outlive it, and the next start recovers', async (t) => {
  const gw = await startGateway({ dataDir, workers: WORKERS });
  const pg = postmasterPid();
  gw.proc.kill('SIGKILL');
  await until('the orphaned server stops', () => !pidAlive(pg));
  const again = await startGateway({ dataDir, workers: WORKERS });
  t.equal((await fetch(`${again.url}/v1/models`)).status, 200);
  t.equal(await again.stop(), 0);
});

t.test('stale postmaster.pid: primary and server both killed with -9, the next start recovers', async (t) => {
  const gw = await startGateway({ dataDir, workers: WORKERS });
  const pg = postmasterPid();
  process.kill(pg, 'SIGKILL');
  gw.proc.kill('SIGKILL');
  await until('both gone', () => !pidAlive(pg) && gw.proc.exitCode === null && gw.proc.signalCode !== null);
  t.equal(postmasterPid(), pg, 'postmaster.pid is left behind, naming a dead process');
  const again = await startGateway({ dataDir, workers: WORKERS });
  t.equal((await fetch(`${again.url}/v1/models`)).status, 200, 'served after crash recovery');
  t.equal(await again.stop(), 0);
});

t.test('stale postmaster.pid naming a live process that is not PostgreSQL: removed, the start goes on', async (t) => {
  const file = join(clusterPath(dataDir), 'postmaster.pid');
  // A pid reused after a crash: this test process stands in for the stranger.
  writeFileSync(file, `${process.pid}\n${clusterPath(dataDir)}\n0\n5432\n\n\n0 0\nready\n`);
  const gw = await startGateway({ dataDir, workers: WORKERS });
  t.ok(gw.logs.some((l) => l.msg?.includes('removed a stale postmaster.pid')), 'the gateway says what it cleared');
  t.equal((await fetch(`${gw.url}/v1/models`)).status, 200);
  t.equal(await gw.stop(), 0);
});

t.test('a server left running on the data directory by a dead gateway is stopped and replaced', async (t) => {
  // What a gateway killed with -9 leaves on a system without setpriv: the server, running, its parent gone.
  const bin = await findBinaries();
  const logFd = (await import('node:fs')).openSync(join(dataDir, 'postgres.log'), 'a');
  const orphan = await startServer(bin, clusterPath(dataDir), { listen_addresses: '', unix_socket_directories: clusterPath(dataDir), port: '5432' }, serverUser(), logFd).catch((err: Error) => {
    throw new Error(`${err.message}: ${readFileSync(join(dataDir, 'postgres.log'), 'utf8').slice(-600)}`);
  });
  t.ok(pidAlive(orphan.pid));
  const gw = await startGateway({ dataDir, workers: WORKERS });
  t.ok(gw.logs.some((l) => l.msg?.includes('stopped an orphaned PostgreSQL server')), 'the gateway says what it stopped');
  t.notOk(pidAlive(orphan.pid), 'the old server is gone');
  t.not(postmasterPid(), orphan.pid, 'a new one runs');
  t.equal((await fetch(`${gw.url}/v1/models`)).status, 200);
  t.equal(await gw.stop(), 0);
});

t.test('run as root with a data directory closed to others: it is opened for passing through (o+x)', { skip: process.getuid?.() !== 0 && 'not root' }, async (t) => {
  const closed = tempDir('tollgate-closed-');
  chmodSync(closed, 0o700);
  const store = await openEmbeddedStore(closed, { maxConnections: 8 });
  t.teardown(() => rmSync(closed, { recursive: true, force: true }));
  t.equal(statSync(closed).mode & 0o777, 0o701, 'o+x added, nothing else');
  t.notOk(lstatSync(clusterPath(closed)).isSymbolicLink(), 'the cluster is inside it');
  await store.close();
});

t.test('run as root under a parent closed to others: the cluster lives in /var/lib/tollgate, linked from it', { skip: process.getuid?.() !== 0 && 'not root' }, async (t) => {
  const parent = tempDir('tollgate-closed-parent-');
  chmodSync(parent, 0o700);
  const closed = join(parent, 'data');
  t.teardown(() => rmSync(parent, { recursive: true, force: true }));
  const store = await openEmbeddedStore(closed, { maxConnections: 8 });
  const target = realpathSync(clusterPath(closed));
  t.teardown(() => rmSync(target, { recursive: true, force: true }));
  t.ok(lstatSync(clusterPath(closed)).isSymbolicLink(), 'data_dir/postgres is a link');
  t.match(target, /^\/var\/lib\/tollgate\//);
  t.ok(pidAlive(store.pid));
  await store.close();
});

t.test('the store opened directly (as the `tollgate` command does with no gateway running) holds the same lock', async (t) => {
  const store = await openEmbeddedStore(dataDir, { maxConnections: 8 });
  await t.rejects(startGateway({ dataDir, timeoutMs: 20_000 }), /in use by process/);
  await store.close();
});
