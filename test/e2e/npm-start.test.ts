// Issue 12 item 14: a gateway started with `npm start` stops when the npm
// process is stopped, as the README's instructions say: SIGTERM to npm frees
// the port within the drain timeout and leaves no PostgreSQL behind; npm
// killed with -9 (it cannot pass anything on) is noticed by the primary.
import { spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { packageRoot } from '../../src/config/paths.js';
import { pidAlive } from '../../src/store/data-lock.js';
import { clusterPath } from '../../src/store/embedded.js';
import { freePort, tempDir } from '../helpers/gateway.js';

const DRAIN_TIMEOUT_MS = 3000;

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });
}

async function npmStart(t: Test): Promise<{ npm: ReturnType<typeof spawn>; port: number; postgres: number }> {
  const port = await freePort();
  const opsPort = await freePort();
  const dataDir = tempDir('tollgate-npm-start-');
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const env: Record<string, string> = { ...(process.env as Record<string, string>), HOST: '127.0.0.1', PORT: String(port), OPS_PORT: String(opsPort), WORKERS: '2', DATA_DIR: dataDir, DRAIN_TIMEOUT_MS: String(DRAIN_TIMEOUT_MS) };
  delete env.DATABASE_URL;
  delete env.REDIS_URL;
  const npm = spawn('npm', ['start'], { cwd: packageRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  npm.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  npm.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const until = Date.now() + 60_000;
  while (!out.includes('"msg":"listening"')) {
    if (Date.now() > until || npm.exitCode !== null) throw new Error(`npm start did not start:\n${out.slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const postgres = Number(readFileSync(join(clusterPath(dataDir), 'postmaster.pid'), 'utf8').split('\n')[0]);
  return { npm, port, postgres };
}

async function freedWithin(port: number, ms: number): Promise<number | null> {
  const start = Date.now();
  while (Date.now() - start < ms) {
    if (!(await portOpen(port))) return Date.now() - start;
    await new Promise((r) => setTimeout(r, 50));
  }
  return null;
}

t.test('item 14: SIGTERM to the `npm start` process stops the gateway and its PostgreSQL', async (t) => {
  const { npm, port, postgres } = await npmStart(t);
  t.ok(await portOpen(port), 'serving');
  npm.kill('SIGTERM');
  const freedAfter = await freedWithin(port, DRAIN_TIMEOUT_MS + 3000);
  t.ok(freedAfter !== null, `the port is free ${freedAfter} ms after SIGTERM to npm (drain timeout ${DRAIN_TIMEOUT_MS} ms)`);
  const end = Date.now() + 5000;
  while (pidAlive(postgres) && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
  t.notOk(pidAlive(postgres), 'no PostgreSQL left behind');
});

t.test('item 14: npm killed with -9: the primary notices its parent is gone and stops', async (t) => {
  const { npm, port, postgres } = await npmStart(t);
  npm.kill('SIGKILL');
  const freedAfter = await freedWithin(port, DRAIN_TIMEOUT_MS + 5000);
  t.ok(freedAfter !== null, `the port is free ${freedAfter} ms after npm was killed`);
  const end = Date.now() + 5000;
  while (pidAlive(postgres) && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
  t.notOk(pidAlive(postgres), 'no PostgreSQL left behind');
});
