// A port the gateway cannot listen on stops the start cleanly (issue 34 item 5):
// exit code 1 with one line on standard error, no restart loop, nothing left
// behind (the embedded server stopped, data_dir's lock released).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import t from 'tap';
import { packageRoot } from '../../src/config/paths.js';
import { freePort, startGateway, tempDir } from '../helpers/gateway.js';

function occupy(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen({ port, host: '127.0.0.1', exclusive: true }, () => resolve(s));
  });
}

function start(env: Record<string, string>): Promise<{ code: number | null; stderr: string; stdout: string; ms: number }> {
  const started = performance.now();
  const full: Record<string, string> = { ...(process.env as Record<string, string>), HOST: '127.0.0.1', WORKERS: '2', LOG_LEVEL: 'info', OPS_PORT: '0', ...env };
  delete full.DATABASE_URL;
  delete full.REDIS_URL;
  const proc = spawn(process.execPath, [join(packageRoot, 'dist/src/main.js')], { env: full, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (c: Buffer) => (stdout += c));
  proc.stderr.on('data', (c: Buffer) => (stderr += c));
  const killer = setTimeout(() => proc.kill('SIGKILL'), 60_000);
  return new Promise((resolve) =>
    proc.once('exit', (code) => {
      clearTimeout(killer);
      resolve({ code, stderr, stdout, ms: performance.now() - started });
    }),
  );
}

t.test('issue 34 item 5: a busy API port exits 1 with one line, no restart loop, the lock released', async (t) => {
  const port = await freePort();
  const blocker = await occupy(port);
  t.teardown(() => blocker.close());
  const dataDir = tempDir();
  const run = await start({ PORT: String(port), DATA_DIR: dataDir });
  t.equal(run.code, 1, 'exit code 1');
  const lines = run.stderr.trim().split('\n').filter((l) => l !== '');
  t.same(lines, [`tollgate: cannot listen on 127.0.0.1:${port} (the port is in use, or the address is not this machine's); set PORT or HOST`], 'one clear line on standard error, no stack');
  t.notMatch(run.stdout, /worker died; starting a replacement/, 'no restart');
  t.notOk(existsSync(join(dataDir, 'gateway.lock')), 'data_dir is unlocked');
  t.ok(run.ms < 30_000, `stopped in ${Math.round(run.ms)} ms`);
  // The same data directory starts at once on a free port: nothing was left behind.
  const gw = await startGateway({ dataDir });
  t.equal((await fetch(gw.url + '/v1/models')).status, 200);
  await gw.stop();
});

t.test('issue 34 item 5: SIMULATOR_PORT sets the in-process simulator port, and a busy one stops the start cleanly', async (t) => {
  const simPort = await freePort();
  const gw = await startGateway({ env: { SIMULATOR_PORT: String(simPort) } });
  const listening = gw.logs.find((l) => l.msg === 'listening');
  t.equal(listening?.simulator, `http://127.0.0.1:${simPort}`, 'the simulator listens where it was told');
  await gw.stop();

  const blocker = await occupy(simPort);
  t.teardown(() => blocker.close());
  const dataDir = tempDir();
  const run = await start({ PORT: String(await freePort()), SIMULATOR_PORT: String(simPort), DATA_DIR: dataDir });
  t.equal(run.code, 1, 'exit code 1');
  t.match(run.stderr.trim(), new RegExp(`^tollgate: cannot start: the simulator cannot listen on 127.0.0.1:${simPort} [^\n]*SIMULATOR_PORT$`), 'one line naming the port, no stack');
  t.notOk(existsSync(join(dataDir, 'gateway.lock')), 'data_dir is unlocked');
});
