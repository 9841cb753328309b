// The load generator's job and result shapes, shared by bench/loadgen.ts (which
// runs them) and the runner (which sends them over IPC and reads the results).
import type { HistogramJson } from './histogram.js';

/**
 * The load generator's HTTP client: undici (the default, every scenario), or
 * raw (bench/raw-client.ts: keep-alive calls without streams, ~20 µs of client
 * CPU per call against undici's ~29 here) for loads one client process could not send otherwise.
 */
export type LoadClient = 'undici' | 'raw';

export interface LoadJob {
  /** e.g. http://127.0.0.1:8080 */
  origin: string;
  /** Full path on the origin, e.g. /v1/chat/completions or /alpha/v1/chat/completions */
  path: string;
  headers: Record<string, string>;
  body: string;
  /** Connections, each with one request in flight (no pipelining). */
  concurrency: number;
  /** false: every request on a new connection (`Connection: close`). */
  keepAlive: boolean;
  /** Streamed answer: record time to first byte and the gaps between SSE events. */
  stream: boolean;
  /** The answer must end with this text (e.g. `data: [DONE]\n\n`), else it counts as an error. */
  expectSuffix: string;
  /** Requests in this phase are sent but not recorded (connections opened, JIT warm). */
  warmupMs: number;
  durationMs: number;
  /** Stop after this many recorded requests even if time remains. */
  maxRequests: number;
  /**
   * Open loop: send this many requests per second on a fixed schedule, whatever
   * is in flight (queued on `concurrency` connections when they are all busy),
   * and time each from its scheduled start, so that a stall shows in the
   * latency of every call it delays. Absent: closed loop, one request in flight per connection.
   */
  ratePerSec?: number;
}

export interface LoadResult {
  requests: number;
  errors: number;
  /** "status 429" or an error code → count. */
  errorKinds: Record<string, number>;
  /** A few error bodies or messages, for the runner to print. */
  errorSamples: string[];
  /** Wall time of the recorded phase, until the last in-flight request finished. */
  elapsedMs: number;
  latency: HistogramJson;
  /** Time to the first body byte (streams). */
  ttfb: HistogramJson | null;
  /** Time between consecutive SSE events as the client sees them (streams). */
  gap: HistogramJson | null;
  /** SSE events received in the recorded phase (streams). */
  events: number;
  bytesIn: number;
  /** The load generator's own CPU time in the recorded phase. */
  cpuUserMs: number;
  cpuSystemMs: number;
}

/** Messages from the load generator to the runner. */
export type LoadMessage =
  | { type: 'ready' }
  /** Warm-up done and drained: the runner snapshots the targets' CPU, then answers `go`. */
  | { type: 'measuring' }
  | { type: 'result'; result: LoadResult }
  | { type: 'failed'; message: string };

/** Messages from the runner. */
export type RunnerMessage = { type: 'job'; job: LoadJob } | { type: 'go' } | { type: 'exit' };
