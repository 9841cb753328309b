// Starts a real gateway (the built dist/src/main.js, as `npm start` does) on a
// free port and talks to it over HTTP.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import { packageRoot } from '../../src/config/paths.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { ADMIN_TOKEN } from './provision.js';

export interface Gateway {
  url: string;
  port: number;
  /** The operator listener (GET /metrics), on a free loopback port of its own. */
  opsUrl: string;
  proc: ChildProcess;
  /** Every JSON log line the gateway wrote so far. */
  logs: Array<Record<string, any>>;
  /** Raw standard output and error, for secret scans. */
  output: () => string;
  waitForLog(pred: (line: Record<string, any>) => boolean, timeoutMs?: number): Promise<Record<string, any>>;
  /** Sends a signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  /** Its data_dir, handed to the instance that restarts on it (as an operator's supervisor would): this one's stop() leaves it. */
  handOverDataDir(): string;
}

/**
 * A port free now, below Linux's ephemeral range (32768–60999). A port the
 * kernel hands out for listen(0) comes from that range, which is also where
 * outgoing connections take their local ports: in the seconds before a
 * gateway binds it, a test's own client connections could take it (seen in a
 * fresh-clone CI run: "cannot listen on 127.0.0.1:41879").
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; ; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await new Promise<boolean>((resolve) => {
      const s = createServer();
      s.once('error', () => resolve(false));
      s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
    });
    if (free) return port;
    if (attempt >= 50) throw new Error('no free port below the ephemeral range after 50 tries');
  }
}

/** What tempDir made, removed when the test's process exits: a data directory holds ~40 MB of PostgreSQL, and CI machines run the suite again and again. */
const tempDirs: string[] = [];
process.once('exit', () => {
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

export function tempDir(prefix = 'tollgate-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.push(dir);
  // Searchable by others, as a data directory normally is: run as root, the embedded PostgreSQL runs as `postgres`.
  chmodSync(dir, 0o755);
  return dir;
}

export interface StartOptions {
  env?: Record<string, string>;
  workers?: number;
  dataDir?: string;
  timeoutMs?: number;
  /** Run the build under this package root instead of this one's (a modified copy of dist/). */
  root?: string;
  /** With dataDir: remove it at stop() as if it were made here (a dead instance's, handed over). */
  ownDataDir?: boolean;
}

export async function startGateway(opts: StartOptions = {}): Promise<Gateway> {
  const port = await freePort();
  let opsPort = await freePort();
  while (opsPort === port) opsPort = await freePort();
  let ownDataDir = opts.dataDir === undefined || opts.ownDataDir === true;
  const dataDir = opts.dataDir ?? tempDir();
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    HOST: '127.0.0.1',
    PORT: String(port),
    OPS_HOST: '127.0.0.1',
    OPS_PORT: String(opsPort),
    WORKERS: String(opts.workers ?? 1),
    DATA_DIR: dataDir,
    LOG_LEVEL: 'info',
    ...opts.env,
  };
  if (!opts.env?.DATABASE_URL) delete env.DATABASE_URL;
  if (!opts.env?.REDIS_URL) delete env.REDIS_URL;
  const proc = spawn(process.execPath, [join(opts.root ?? packageRoot, 'dist/src/main.js')], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: Array<Record<string, any>> = [];
  let raw = '';
  const waiters: Array<{ pred: (l: Record<string, any>) => boolean; resolve: (l: Record<string, any>) => void }> = [];
  let pending = '';
  proc.stdout!.on('data', (chunk: Buffer) => {
    raw += chunk.toString();
    pending += chunk.toString();
    let nl: number;
    while ((nl = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      let parsed: Record<string, any>;
      try {
        parsed = JSON.parse(line);
      } catch {
        parsed = { text: line };
      }
      logs.push(parsed);
      for (let i = waiters.length - 1; i >= 0; i--) {
        if (waiters[i].pred(parsed)) {
          waiters[i].resolve(parsed);
          waiters.splice(i, 1);
        }
      }
    }
  });
  proc.stderr!.on('data', (chunk: Buffer) => (raw += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));

  const waitForLog = (pred: (l: Record<string, any>) => boolean, timeoutMs = 15_000): Promise<Record<string, any>> => {
    const found = logs.find(pred);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`log line not seen in ${timeoutMs} ms; output:\n${raw.slice(-3000)}`)), timeoutMs);
      waiters.push({ pred, resolve: (l) => (clearTimeout(timer), resolve(l)) });
      void exited.then((code) => reject(new Error(`gateway exited (${code}) before the log line; output:\n${raw.slice(-3000)}`)));
    });
  };

  await waitForLog((l) => l.msg === 'listening', opts.timeoutMs ?? 60_000);
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    opsUrl: `http://127.0.0.1:${opsPort}`,
    proc,
    logs,
    output: () => raw,
    waitForLog,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      const code = await exited;
      if (ownDataDir) rmSync(dataDir, { recursive: true, force: true });
      return code;
    },
    handOverDataDir() {
      ownDataDir = false;
      return dataDir;
    },
  };
}

/**
 * Until GET /readyz answers 200, as a load balancer would wait: the catalog
 * loaded and each worker's warm pool thread ready (it loads the tokenizer after
 * listening). Resolves with how long that took; rejects after `timeoutMs`.
 */
export async function waitReady(gw: Gateway, timeoutMs = 30_000): Promise<number> {
  const from = performance.now();
  // Every worker must say ready, and a request reaches any one: a few 200s in a row.
  let ready = 0;
  while (ready < 4) {
    ready = (await fetch(`${gw.url}/readyz`)).status === 200 ? ready + 1 : 0;
    if (performance.now() - from > timeoutMs) throw new Error(`/readyz did not say ready within ${timeoutMs} ms`);
    if (ready === 0) await new Promise((r) => setTimeout(r, 20));
  }
  return performance.now() - from;
}

/**
 * A gateway on database `db` (its console open with the tests' ADMIN_TOKEN)
 * beside a simulator of its own with the demo catalog's instances; both
 * stopped when `t` ends.
 */
export async function gatewayWithSimulator(t: Test, db: string, opts: { env?: Record<string, string>; workers?: number } = {}): Promise<{ gw: Gateway; sim: Simulator }> {
  const sim = await startSimulator({ instances: ['alpha', 'beta', 'gamma'] });
  const gw = await startGateway({ env: { DATABASE_URL: db, SIMULATOR_URL: sim.url, ADMIN_TOKEN, ...opts.env }, workers: opts.workers });
  t.teardown(async () => {
    await gw.stop();
    await sim.close();
  });
  return { gw, sim };
}
