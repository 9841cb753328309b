// The load generator: its own process (pinned by the runner to the load core),
// an undici Pool with one request in flight per connection, fixed concurrency,
// bounded by time and by count. It records every request in histograms (see
// histogram.ts) and measures its own CPU so the report can say what floor the
// client itself imposes.
//
// Driven over IPC by bench/run.ts (job → `measuring` → go → result), or alone:
//   node dist/bench/loadgen.js '{"origin":"http://127.0.0.1:7071","path":"/alpha/v1/chat/completions",...}'
// which prints the LoadResult as one JSON line.
//
// undici's low-level dispatch() with a handler object is used instead of
// request(): no Readable per response, so the client spends less CPU per
// request and the numbers say more about the target.
import { Pool, type Dispatcher } from 'undici';
import { Histogram } from './histogram.js';
import type { LoadClient, LoadJob, LoadMessage, LoadResult, RunnerMessage } from './loadgen-job.js';
import { RawPool } from './raw-client.js';

/** The runner's --client (LoadGen.start): raw serves keep-alive calls without streams; the rest stay on undici. */
const CLIENT = (process.env.TOLLGATE_BENCH_CLIENT ?? 'undici') as LoadClient;

/** What the lanes dispatch on: undici's Pool, or the raw client's. */
interface Lanes {
  dispatch(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): unknown;
}

/** How long requests still in flight at the end of a phase may take before the run is abandoned. */
const GRACE_MS = 30_000;
const MAX_SAMPLES = 5;
const NL = 0x0a;

class Phase {
  readonly latency = new Histogram();
  readonly ttfb = new Histogram();
  readonly gap = new Histogram();
  requests = 0;
  errors = 0;
  events = 0;
  bytesIn = 0;
  readonly errorKinds: Record<string, number> = {};
  readonly errorSamples: string[] = [];
  lanes = 0;
  endAt = 0;
  lastEnd = 0;
  done: () => void = () => {};

  constructor(
    readonly job: LoadJob,
    readonly record: boolean,
  ) {}

  error(kind: string, sample: string): void {
    this.errors++;
    this.errorKinds[kind] = (this.errorKinds[kind] ?? 0) + 1;
    if (this.errorSamples.length < MAX_SAMPLES) this.errorSamples.push(`${kind}: ${sample.slice(0, 300)}`);
  }
}

/** One request; also its undici handler (fixed shape, no closures per request). */
class Exchange implements Dispatcher.DispatchHandler {
  private status = 0;
  private first = -1;
  private lastEvent = -1;
  private endsWithNl = false;
  private tail = '';
  private errorBody = '';

  constructor(
    private readonly phase: Phase,
    private readonly next: () => void,
    /** When the request was sent, or (open loop) scheduled to be. */
    private readonly t0 = performance.now(),
  ) {}

  // undici tells handler styles apart by this method; nothing to do here.
  onRequestStart(): void {}

  onResponseStart(_c: Dispatcher.DispatchController, statusCode: number): void {
    this.status = statusCode;
  }

  onResponseData(_c: Dispatcher.DispatchController, chunk: Buffer): void {
    const now = performance.now();
    const phase = this.phase;
    phase.bytesIn += chunk.length;
    if (this.status < 200 || this.status >= 300) {
      if (this.errorBody.length < 300) this.errorBody += chunk.toString('utf8', 0, 300);
      return;
    }
    if (this.first < 0) this.first = now;
    const suffix = phase.job.expectSuffix.length;
    if (suffix > 0) this.tail = (this.tail + chunk.toString('latin1', Math.max(0, chunk.length - suffix))).slice(-suffix);
    if (!phase.job.stream) return;
    // SSE events end with a blank line; events that arrive in one read are 0 ms apart.
    let boundaries = this.endsWithNl && chunk[0] === NL ? 1 : 0;
    for (let at = chunk.indexOf('\n\n'); at >= 0; at = chunk.indexOf('\n\n', at + 2)) boundaries++;
    this.endsWithNl = chunk[chunk.length - 1] === NL;
    if (boundaries === 0) return;
    if (phase.record) {
      phase.events += boundaries;
      if (this.lastEvent >= 0) phase.gap.record((now - this.lastEvent) * 1e6);
      for (let i = 1; i < boundaries; i++) phase.gap.record(0);
    }
    this.lastEvent = now;
  }

  onResponseEnd(): void {
    const phase = this.phase;
    const end = performance.now();
    if (this.status < 200 || this.status >= 300) phase.error(`status ${this.status}`, this.errorBody);
    else if (phase.job.expectSuffix !== '' && this.tail !== phase.job.expectSuffix) phase.error('truncated', `answer did not end with ${JSON.stringify(phase.job.expectSuffix)}: …${JSON.stringify(this.tail)}`);
    else if (phase.record) {
      phase.requests++;
      phase.latency.record((end - this.t0) * 1e6);
      if (phase.job.stream && this.first >= 0) phase.ttfb.record((this.first - this.t0) * 1e6);
    }
    phase.lastEnd = end;
    this.next();
  }

  onResponseError(_c: Dispatcher.DispatchController, err: Error): void {
    const code = (err as NodeJS.ErrnoException).code ?? err.name;
    this.phase.error(code, err.message);
    this.phase.lastEnd = performance.now();
    this.next();
  }
}

function runPhase(pool: Lanes, job: LoadJob, record: boolean, ms: number, body: Buffer): Promise<Phase> {
  const phase = new Phase(job, record);
  if (ms <= 0) return Promise.resolve(phase);
  const opts: Dispatcher.DispatchOptions = {
    origin: job.origin,
    path: job.path,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...job.headers },
    body,
    reset: !job.keepAlive,
  };
  return new Promise((resolve, reject) => {
    const started = performance.now();
    phase.endAt = started + ms;
    const guard = setTimeout(() => reject(new Error(`requests still in flight ${GRACE_MS} ms after the end of the phase`)), ms + GRACE_MS);
    phase.done = () => {
      clearTimeout(guard);
      resolve(phase);
    };
    const lane = (): void => {
      // Errors stop a lane too: a target that refuses fast must not be hammered for the whole slot.
      const more = performance.now() < phase.endAt && (!record || phase.requests < job.maxRequests) && phase.errors === 0;
      if (!more) {
        if (--phase.lanes === 0) phase.done();
        return;
      }
      pool.dispatch(opts, new Exchange(phase, lane));
    };
    if (job.ratePerSec !== undefined) return paced(pool, opts, phase, job.ratePerSec, started);
    phase.lanes = job.concurrency;
    for (let i = 0; i < job.concurrency; i++) pool.dispatch(opts, new Exchange(phase, lane));
  });
}

/**
 * Open loop: request i is due at started + i / rate. Every millisecond the
 * requests that are due go out, each timed from when it was due; `lanes`
 * counts those in flight, and the phase ends when the schedule is over and
 * the last answer is in.
 */
function paced(pool: Lanes, opts: Dispatcher.DispatchOptions, phase: Phase, rate: number, started: number): void {
  const interval = 1000 / rate;
  let sent = 0;
  let scheduling = true;
  const answered = (): void => {
    if (--phase.lanes === 0 && !scheduling) phase.done();
  };
  const tick = (): void => {
    const now = performance.now();
    const stop = now >= phase.endAt || phase.errors > 0;
    for (let due = started + sent * interval; !stop && due <= now; due = started + sent * interval) {
      sent++;
      phase.lanes++;
      pool.dispatch(opts, new Exchange(phase, answered, due));
    }
    if (!stop) {
      setTimeout(tick, 1);
      return;
    }
    scheduling = false;
    if (phase.lanes === 0) phase.done();
  };
  tick();
}

async function runJob(job: LoadJob, measuring: () => Promise<void>): Promise<LoadResult> {
  const body = Buffer.from(job.body);
  const pool =
    CLIENT === 'raw' && job.keepAlive && !job.stream
      ? new RawPool(job.origin, job.path, job.headers, body, job.concurrency)
      : new Pool(job.origin, {
          connections: job.concurrency,
          pipelining: 1,
          keepAliveTimeout: 60_000,
          headersTimeout: 30_000,
          bodyTimeout: 30_000,
          connect: { timeout: 10_000 },
        });
  try {
    const warm = await runPhase(pool, job, false, job.warmupMs, body);
    if (warm.errors > 0) return result(warm, 0, { user: 0, system: 0 });
    await measuring();
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const phase = await runPhase(pool, job, true, job.durationMs, body);
    const cpu = process.cpuUsage(cpu0);
    return result(phase, Math.max(phase.lastEnd, t0) - t0, cpu);
  } finally {
    await pool.destroy().catch(() => {});
  }
}

function result(p: Phase, elapsedMs: number, cpu: NodeJS.CpuUsage): LoadResult {
  return {
    requests: p.requests,
    errors: p.errors,
    errorKinds: p.errorKinds,
    errorSamples: p.errorSamples,
    elapsedMs,
    latency: p.latency.toJSON(),
    ttfb: p.job.stream ? p.ttfb.toJSON() : null,
    gap: p.job.stream ? p.gap.toJSON() : null,
    events: p.events,
    bytesIn: p.bytesIn,
    cpuUserMs: cpu.user / 1000,
    cpuSystemMs: cpu.system / 1000,
  };
}

function send(m: LoadMessage): void {
  process.send!(m);
}

if (process.send !== undefined) {
  let go: (() => void) | null = null;
  process.on('message', (m: RunnerMessage) => {
    if (m.type === 'go') go?.();
    else if (m.type === 'exit') process.exit(0);
    else if (m.type === 'job') {
      const measuring = (): Promise<void> =>
        new Promise((resolve) => {
          go = resolve;
          send({ type: 'measuring' });
        });
      runJob(m.job, measuring).then(
        (result) => send({ type: 'result', result }),
        (err: Error) => send({ type: 'failed', message: err.message }),
      );
    }
  });
  // The runner went away (crash, Ctrl-C): never outlive it.
  process.on('disconnect', () => process.exit(0));
  send({ type: 'ready' });
} else {
  const job = JSON.parse(process.argv[2] ?? '') as LoadJob;
  const result = await runJob(job, async () => {});
  process.stdout.write(JSON.stringify(result) + '\n');
  process.exit(result.errors > 0 ? 1 : 0);
}
