// Redis topologies of a test's own, with the real servers on loopback ports
// chosen at random, in a temporary directory: a Sentinel deployment (a
// primary, one replica, three sentinels: `redis-server --sentinel`, so the
// redis-sentinel package is not needed), and a Redis Cluster (three
// primaries with a replica each, made by `redis-cli --cluster create`).
// Nothing is kept on disk; every server is stopped at teardown, even when the
// test fails.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import type { Test } from 'tap';
import { freePort } from './gateway.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** True when a Redis server (or sentinel) answers PING at this URL within a second. */
export async function ping(url: string): Promise<boolean> {
  const r = new Redis(url, { lazyConnect: true, connectTimeout: 1000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  r.on('error', () => {});
  try {
    await r.connect();
    return (await r.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    r.disconnect();
  }
}

export interface Server {
  port: number;
  proc: ChildProcess;
}

export interface SentinelTopology {
  /** The URL the gateway is given: redis-sentinel://127.0.0.1:<s1>,…/tg */
  url: string;
  master: string;
  sentinels: Server[];
  /** The data servers, by port: the primary at first, then the replica. */
  servers: Map<number, Server>;
  /** The port of the primary the sentinels name now. */
  primaryPort(): Promise<number>;
  /** kill -9 of the current primary; resolves to its port. */
  killPrimary(): Promise<number>;
  /** Resolves once the sentinels name a primary other than `oldPort`, and it answers as one; the ms it took. */
  waitForPromotion(oldPort: number, timeoutMs?: number): Promise<number>;
}

const MASTER = 'tg';
/** Small for a test: a dead primary is noticed after 1 s, a failover retried after 3 s. */
const DOWN_AFTER_MS = 1000;

/** Null (the test skipped, or failed under CI=true) when redis-server is missing. */
export async function sentinelTopology(t: Test): Promise<SentinelTopology | null> {
  const dir = mkdtempSync(join(tmpdir(), 'tg-sentinel-'));
  const procs: ChildProcess[] = [];
  t.teardown(async () => {
    await Promise.all(procs.map(stopProc));
    rmSync(dir, { recursive: true, force: true });
  });
  const start = async (args: string[], port: number): Promise<Server | null> => {
    const proc = spawn('redis-server', args, { stdio: 'ignore', cwd: dir });
    procs.push(proc);
    const failed = new Promise<boolean>((resolve) => proc.once('error', () => resolve(true)));
    for (let i = 0; i < 100; i++) {
      if (await Promise.race([ping(`redis://127.0.0.1:${port}`), failed])) return proc.exitCode === null ? { port, proc } : null;
      await sleep(50);
    }
    return null;
  };
  const data = (port: number, extra: string[] = []): string[] => ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...extra];

  const pPort = await freePort();
  const primary = await start(data(pPort), pPort);
  if (primary === null) {
    if (process.env.CI === 'true') t.fail('redis-server could not be started (CI=true requires it)');
    else t.plan(0, 'skipped: redis-server could not be started; install it to run this test');
    return null;
  }
  const rPort = await freePort();
  const replica = (await start(data(rPort, ['--replicaof', '127.0.0.1', String(pPort)]), rPort))!;
  const sentinels: Server[] = [];
  for (let i = 0; i < 3; i++) {
    const port = await freePort();
    const conf = join(dir, `sentinel-${i}.conf`);
    // A sentinel rewrites its config file (what it learns of replicas and peers): one writable file each.
    writeFileSync(
      conf,
      [`port ${port}`, 'bind 127.0.0.1', `dir ${dir}`, `sentinel monitor ${MASTER} 127.0.0.1 ${pPort} 2`, `sentinel down-after-milliseconds ${MASTER} ${DOWN_AFTER_MS}`, `sentinel failover-timeout ${MASTER} 3000`, `sentinel parallel-syncs ${MASTER} 1`, ''].join('\n'),
    );
    sentinels.push((await start([conf, '--sentinel'], port))!);
  }
  const servers = new Map([primary, replica].map((s) => [s.port, s]));
  const askSentinels = async (): Promise<number | null> => {
    for (const s of sentinels) {
      if (s.proc.exitCode !== null) continue;
      const r = new Redis({ port: s.port, host: '127.0.0.1', lazyConnect: true, connectTimeout: 500, maxRetriesPerRequest: 0, retryStrategy: () => null });
      r.on('error', () => {});
      try {
        await r.connect();
        const addr = (await r.call('SENTINEL', 'get-master-addr-by-name', MASTER)) as [string, string] | null;
        if (addr !== null) return Number(addr[1]);
      } catch {
        // the next sentinel
      } finally {
        r.disconnect();
      }
    }
    return null;
  };
  // The replica must be in sync, and every sentinel must know the replica and its peers, before a failover can work.
  const deadline = Date.now() + 15_000;
  for (;;) {
    const ready = await Promise.all(
      sentinels.map(async (s) => {
        const r = new Redis({ port: s.port, host: '127.0.0.1', maxRetriesPerRequest: 0, retryStrategy: () => null });
        r.on('error', () => {});
        try {
          const info = (await r.call('SENTINEL', 'master', MASTER)) as string[];
          const field = (k: string): number => Number(info[info.indexOf(k) + 1]);
          return field('num-slaves') >= 1 && field('num-other-sentinels') >= 2;
        } catch {
          return false;
        } finally {
          r.disconnect();
        }
      }),
    );
    if (ready.every(Boolean)) break;
    if (Date.now() > deadline) throw new Error('sentinel topology: the sentinels did not discover the replica and each other within 15 s');
    await sleep(200);
  }
  return {
    url: `redis-sentinel://${sentinels.map((s) => `127.0.0.1:${s.port}`).join(',')}/${MASTER}`,
    master: MASTER,
    sentinels,
    servers,
    primaryPort: async () => (await askSentinels()) ?? pPort,
    async killPrimary() {
      const port = (await askSentinels()) ?? pPort;
      await stopProc(servers.get(port)!.proc);
      return port;
    },
    async waitForPromotion(oldPort, timeoutMs = 20_000) {
      const started = Date.now();
      while (Date.now() - started < timeoutMs) {
        const port = await askSentinels();
        if (port !== null && port !== oldPort) {
          const r = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 0, retryStrategy: () => null });
          r.on('error', () => {});
          const role = await r.call('ROLE').catch(() => null);
          r.disconnect();
          if (Array.isArray(role) && role[0] === 'master') return Date.now() - started;
        }
        await sleep(100);
      }
      throw new Error(`sentinel topology: no replica promoted within ${timeoutMs} ms`);
    },
  };
}

async function stopProc(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => p.once('exit', () => resolve()));
  p.kill('SIGKILL');
  await exited;
}

export interface ClusterTopology {
  /** The URL the gateway is given: redis-cluster://127.0.0.1:<p1>,… (every node, as seeds). */
  url: string;
  /** Every node, by port. */
  servers: Map<number, Server>;
  /** The primaries now, by port, with the slot ranges each serves. */
  primaries(): Promise<Map<number, Array<[number, number]>>>;
  /** kill -9 of this primary. */
  kill(port: number): Promise<void>;
  /** Resolves once every slot is served again by a live primary (a replica promoted); the ms it took. */
  waitForPromotion(oldPort: number, timeoutMs?: number): Promise<number>;
}

/** Small for a test: a primary not answering for 1 s is failed over (the default is 15 s). */
const NODE_TIMEOUT_MS = 1000;

/**
 * A Redis Cluster of this test's own: three primaries with one replica each
 * (six redis-server processes, each with its cluster bus on a port chosen
 * here too). Null (the test skipped, or failed under CI=true) when
 * redis-server is missing.
 */
export async function clusterTopology(t: Test): Promise<ClusterTopology | null> {
  const dir = mkdtempSync(join(tmpdir(), 'tg-cluster-'));
  const procs: ChildProcess[] = [];
  t.teardown(async () => {
    await Promise.all(procs.map(stopProc));
    rmSync(dir, { recursive: true, force: true });
  });
  const servers = new Map<number, Server>();
  for (let i = 0; i < 6; i++) {
    const port = await freePort();
    let bus = await freePort();
    while (bus === port) bus = await freePort();
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir];
    // Cluster state in a file of its own per node; a replica may always stand in for its primary (validity factor 0).
    args.push('--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`, '--cluster-port', String(bus), '--cluster-node-timeout', String(NODE_TIMEOUT_MS));
    // Only the dead primary's slots stop while it is replaced: the others are served throughout (docs/billing.md).
    args.push('--cluster-require-full-coverage', 'no', '--cluster-replica-validity-factor', '0');
    const proc = spawn('redis-server', args, { stdio: 'ignore', cwd: dir });
    procs.push(proc);
    const failed = new Promise<boolean>((resolve) => proc.once('error', () => resolve(true)));
    let up = false;
    for (let j = 0; j < 100 && !up; j++) {
      up = (await Promise.race([ping(`redis://127.0.0.1:${port}`), failed])) && proc.exitCode === null;
      if (!up) await sleep(50);
    }
    if (!up) {
      if (i === 0 && process.env.CI !== 'true') {
        t.plan(0, 'skipped: redis-server could not be started; install it to run this test');
        return null;
      }
      t.fail(`redis-server for the cluster could not be started on :${port}`);
      return null;
    }
    servers.set(port, { port, proc });
  }
  const ports = [...servers.keys()];
  await new Promise<void>((resolve, reject) =>
    execFile('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '1', '--cluster-yes'], { timeout: 30_000 }, (err, stdout) =>
      err === null ? resolve() : reject(new Error(`redis-cli --cluster create failed: ${err.message}\n${stdout}`)),
    ),
  );
  const node = (port: number): Redis => {
    const r = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 500 });
    r.on('error', () => {});
    return r;
  };
  /** CLUSTER NODES as one live node sees it: the primaries (not failed) and their slot ranges. */
  const primaries = async (): Promise<Map<number, Array<[number, number]>>> => {
    for (const [port, s] of servers) {
      if (s.proc.exitCode !== null || s.proc.signalCode !== null) continue;
      const r = node(port);
      try {
        const text = String(await r.call('CLUSTER', 'NODES'));
        const out = new Map<number, Array<[number, number]>>();
        for (const line of text.trim().split('\n')) {
          const f = line.split(' ');
          if (!f[2].includes('master') || f[2].includes('fail')) continue;
          const ranges = f.slice(8).filter((x) => /^\d+(-\d+)?$/.test(x)).map((x) => x.split('-').map(Number)).map((a) => [a[0], a[1] ?? a[0]] as [number, number]);
          if (ranges.length > 0) out.set(Number(f[1].split(':')[1].split('@')[0]), ranges);
        }
        return out;
      } catch {
        // ask the next node
      } finally {
        r.disconnect();
      }
    }
    return new Map();
  };
  const covered = (m: Map<number, Array<[number, number]>>): number => [...m.values()].flat().reduce((n, [a, b]) => n + b - a + 1, 0);
  // Ready: every node says the cluster is ok, every slot has a primary, and every primary has its replica in sync.
  const deadline = Date.now() + 30_000;
  for (;;) {
    const states = await Promise.all(
      ports.map(async (p) => {
        const r = node(p);
        try {
          const info = String(await r.call('CLUSTER', 'INFO'));
          const repl = String(await r.info('replication'));
          const ok = info.includes('cluster_state:ok');
          // Online, and acknowledging (offset > 0): a replica just past its sync may not answer a WAIT yet.
          if (repl.includes('role:master')) return ok && /connected_slaves:1/.test(repl) && /slave0:.*state=online,offset=[1-9]/.test(repl);
          return ok && repl.includes('master_link_status:up');
        } catch {
          return false;
        } finally {
          r.disconnect();
        }
      }),
    );
    const map = await primaries();
    if (states.every(Boolean) && map.size === 3 && covered(map) === 16384) break;
    if (Date.now() > deadline) throw new Error('cluster topology: not ready within 30 s');
    await sleep(200);
  }
  return {
    url: `redis-cluster://${ports.map((p) => `127.0.0.1:${p}`).join(',')}`,
    servers,
    primaries,
    async kill(port) {
      await stopProc(servers.get(port)!.proc);
    },
    async waitForPromotion(oldPort, timeoutMs = 20_000) {
      const started = Date.now();
      while (Date.now() - started < timeoutMs) {
        const map = await primaries();
        if (!map.has(oldPort) && map.size === 3 && covered(map) === 16384) {
          // The promoted replica answers as a primary.
          const promoted = [...map.keys()].filter((p) => servers.get(p)!.proc.exitCode === null && servers.get(p)!.proc.signalCode === null);
          if (promoted.length === 3) return Date.now() - started;
        }
        await sleep(100);
      }
      throw new Error(`cluster topology: the slots of :${oldPort} not served by a promoted replica within ${timeoutMs} ms`);
    },
  };
}
