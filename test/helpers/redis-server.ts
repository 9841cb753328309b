// A redis-server of the caller's own on a free loopback port (nothing kept on
// disk), which it may stop, start again, or stall with SIGSTOP without
// touching anyone else's Redis. Tap-free: the tests (ownRedis in
// test/e2e/scale-out-helpers.ts) and the soak (bench/soak.ts) both use it.
import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from './gateway.js';
import { ping } from './redis-topology.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export interface OwnRedis {
  url: string;
  stop(): Promise<void>;
  start(): Promise<void>;
  /** SIGSTOP / SIGCONT: a stalled server that keeps its connections open. */
  pause(): void;
  resume(): void;
}

/** Started and answering PING; null when redis-server could not be started (not installed). */
export async function startRedisServer(): Promise<OwnRedis | null> {
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  let proc: ChildProcess | null = null;
  const start = async (): Promise<void> => {
    proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    const failed = new Promise<boolean>((resolve) => proc!.once('error', () => resolve(true)));
    for (let i = 0; i < 100; i++) {
      if (await Promise.race([ping(url), failed])) break;
      await sleep(50);
    }
  };
  const stop = async (): Promise<void> => {
    const p = proc;
    proc = null;
    if (p === null || p.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => p.once('exit', () => resolve()));
    p.kill('SIGKILL');
    await exited;
  };
  const signal = (sig: NodeJS.Signals): void => void (proc as ChildProcess | null)?.kill(sig);
  await start();
  if (!(await ping(url))) {
    await stop();
    return null;
  }
  return { url, stop, start, pause: () => signal('SIGSTOP'), resume: () => signal('SIGCONT') };
}
