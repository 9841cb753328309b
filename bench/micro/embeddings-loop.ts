// What serving 128 × 3072 float embeddings leaves on the HTTP worker's event
// loop, measured on the CPU rather than as a delay (issue 33): on a shared
// 2-core machine the bench's event-loop delay is mostly time the loop was
// preempted. Each build given starts as the bench starts one (simulator on
// CPU 1, gateway on CPU 0, WORKERS=1, one pool thread) and serves 2
// connections of embeddings for SECONDS, twice per round, builds interleaved:
//   - profiled (--cpu-prof at 200 µs, --trace-gc): the worker main thread's
//     longest runs of consecutive busy samples (an upper bound of its longest
//     task: tasks back to back make one run) and how many of their samples were
//     the collector, and the main isolate's full collections;
//   - plain: CPU per request of the worker's main thread and of its other
//     threads (pool, libuv, V8's helpers), from /proc.
//   node dist/bench/micro/embeddings-loop.js SECONDS ROUNDS DIR [DIR…]   (DIR: a checkout with dist/ built)
// Environment settings pass through to the gateways (HEAP_MEMORY_REDUCER=true, say); SHOW_FULL_GC=1 prints
// the main isolate's full collections as V8 traced them.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const [seconds = '12', rounds = '3', ...roots] = process.argv.slice(2);
if (roots.length === 0) throw new Error('usage: embeddings-loop.js SECONDS ROUNDS DIR [DIR…]');
const SAMPLE_US = 200;

const freePort = (): Promise<number> =>
  new Promise((r) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => r(port));
    });
  });

function lineFrom(proc: ChildProcess, pred: (l: string) => boolean): Promise<string> {
  return new Promise((resolveLine) => {
    let buf = '';
    proc.stdout!.on('data', (b: Buffer) => {
      buf += b.toString();
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const l = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (pred(l)) resolveLine(l);
      }
    });
  });
}

/** CPU ms of each thread of a process (utime + stime, at 100 ticks a second). */
function threadsCpu(pid: number): Map<string, number> {
  const m = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      m.set(tid, (Number(f[11]) + Number(f[12])) * 10);
    } catch {
      // a thread that ended
    }
  }
  return m;
}

interface Profile {
  nodes: Array<{ id: number; callFrame: { functionName: string } }>;
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** The busy runs of a profile inside [fromUs, toUs], longest first: [samples, of them GC]. */
function busyRuns(p: Profile, fromUs: number, toUs: number): Array<[number, number]> {
  const name = new Map(p.nodes.map((n) => [n.id, n.callFrame.functionName]));
  const runs: Array<[number, number]> = [];
  let run = 0;
  let gc = 0;
  let t = p.startTime;
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i] ?? 0;
    if (t < fromUs || t > toUs) continue;
    const fn = name.get(p.samples[i]!);
    if (fn === '(idle)') {
      if (run > 0) runs.push([run, gc]);
      run = gc = 0;
      continue;
    }
    run++;
    if (fn === '(garbage collector)') gc++;
  }
  if (run > 0) runs.push([run, gc]);
  return runs.sort((a, b) => b[0] - a[0]);
}

async function serve(root: string, profiled: boolean): Promise<string> {
  const simPort = await freePort();
  const sim = spawn('taskset', ['-c', '1', process.execPath, join(root, 'dist/src/simulator/main.js'), '--port', String(simPort), '--instances', 'alpha,beta,gamma'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const simUrl = (JSON.parse(await lineFrom(sim, (l) => l.includes('"simulator"'))) as { simulator: string }).simulator;
  const [port, opsPort] = [await freePort(), await freePort()];
  const admin = randomBytes(24).toString('hex');
  const dataDir = mkdtempSync(join(tmpdir(), 'embeddings-loop-'));
  const profDir = mkdtempSync(join(tmpdir(), 'embeddings-loop-prof-'));
  const env: NodeJS.ProcessEnv = { ...process.env, HOST: '127.0.0.1', PORT: String(port), OPS_PORT: String(opsPort), WORKERS: '1', PISCINA_MAX_THREADS: '1', DATA_DIR: dataDir, SIMULATOR_URL: simUrl, ADMIN_TOKEN: admin, LOG_LEVEL: 'warn', MAX_CONCURRENT_PER_KEY: '64' };
  delete env.DATABASE_URL;
  delete env.REDIS_URL;
  const nodeArgs = profiled ? ['--trace-gc', '--cpu-prof', `--cpu-prof-dir=${profDir}`, `--cpu-prof-interval=${SAMPLE_US}`] : [];
  const gw = spawn('taskset', ['-c', '0', process.execPath, ...nodeArgs, join(root, 'dist/src/main.js')], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  let gcLog = '';
  let recording = false;
  gw.stdout!.on('data', (b: Buffer) => {
    if (recording) gcLog += b.toString();
  });
  try {
    const origin = `http://127.0.0.1:${port}`;
    for (let i = 0; ; i++) {
      const ok = await fetch(`${origin}/readyz`).then((r) => r.ok, () => false);
      if (ok) break;
      if (i > 600) throw new Error(`${root}: the gateway did not start`);
      await new Promise((r) => setTimeout(r, 200));
    }
    const console_ = async (method: string, path: string, body: unknown): Promise<Record<string, unknown>> => {
      const r = await fetch(`${origin}/console/v1${path}`, { method, headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      if (r.status >= 300) throw new Error(await r.text());
      return (await r.json()) as Record<string, unknown>;
    };
    const org = await console_('POST', '/organizations', { name: 'loop', balance: '1000000000.00' });
    await console_('PATCH', `/organizations/${org.id}`, { quota_per_second: 1_000_000, quota_per_minute: 60_000_000 });
    const key = (await console_('POST', `/organizations/${org.id}/keys`, { name: 'loop' })).secret as string;
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const input = Array.from({ length: 128 }, (_, i) => `${i === 0 ? '[sim:floats] [sim:dims=3072] ' : ''}text number ${i} to embed`);
    const body = JSON.stringify({ model: 'nw-embed-1', encoding_format: 'base64', input });
    const embed = async (): Promise<void> => {
      const r = await fetch(`${origin}/v1/embeddings`, { method: 'POST', headers, body });
      await r.arrayBuffer();
      if (r.status !== 200) throw new Error(`embeddings answered ${r.status}`);
    };
    // The key reaches the worker within ~250 ms; then a few to warm up.
    for (let i = 0; i < 50; i++) if ((await fetch(`${origin}/v1/embeddings`, { method: 'POST', headers, body }).then(async (r) => (await r.arrayBuffer(), r.status))) === 200) break;
    for (let i = 0; i < 4; i++) await embed();
    const worker = Number(execFileSync('pgrep', ['-P', String(gw.pid), '-f', 'main.js']).toString().trim().split('\n')[0]);
    const before = threadsCpu(worker);
    recording = true;
    const fromUs = Number(process.hrtime.bigint() / 1000n);
    let requests = 0;
    const end = Date.now() + Number(seconds) * 1000;
    await Promise.all(
      [0, 1].map(async () => {
        while (Date.now() < end) {
          await embed();
          requests++;
        }
      }),
    );
    const toUs = Number(process.hrtime.bigint() / 1000n);
    recording = false;
    const after = threadsCpu(worker);
    let main = 0;
    let other = 0;
    for (const [tid, ms] of after) {
      const d = ms - (before.get(tid) ?? 0);
      if (tid === String(worker)) main += d;
      else other += d;
    }
    gw.kill('SIGTERM');
    await new Promise((r) => gw.once('exit', r));
    if (!profiled) return `${requests} requests; per request: event loop ${(main / requests).toFixed(2)} ms, the worker's other threads ${(other / requests).toFixed(2)} ms`;
    const file = readdirSync(profDir).find((f) => f.split('.')[3] === String(worker) && f.split('.')[4] === '0');
    const runs = file === undefined ? [] : busyRuns(JSON.parse(readFileSync(join(profDir, file), 'utf8')) as Profile, fromUs, toUs);
    const over = (ms: number): number => runs.filter(([n]) => (n * SAMPLE_US) / 1000 > ms).length;
    // The main isolate's lines: its address is not a thread's (0x7f… on Linux).
    const full = gcLog.split('\n').filter((l) => l.startsWith(`[${worker}:`) && !l.startsWith(`[${worker}:0x7f`) && l.includes('Mark-Compact'));
    if (process.env.SHOW_FULL_GC === '1') for (const l of full) console.log(l.trim());
    const top = runs.slice(0, 5).map(([n, gc]) => `${n}${gc > 0 ? ` (${gc} GC)` : ''}`);
    return `${requests} requests; longest busy runs (samples of ${SAMPLE_US} µs): ${top.join(', ')}; runs over 2 ms ${over(2)}, over 5 ms ${over(5)}; full collections of the main isolate ${full.length} (${full.filter((l) => l.includes('(reduce)')).length} by the memory reducer)`;
  } finally {
    if (gw.exitCode === null) gw.kill('SIGTERM');
    sim.kill('SIGTERM');
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(profDir, { recursive: true, force: true });
  }
}

for (let round = 1; round <= Number(rounds); round++) {
  for (const root of roots.map((r) => resolve(r))) {
    for (const profiled of [true, false]) console.log(`round ${round} ${root} ${profiled ? 'profiled' : 'plain   '}: ${await serve(root, profiled)}`);
  }
}
