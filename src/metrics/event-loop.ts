// The event loop's delay: one monitor per process, read by the per-scrape
// summary (registry.ts, event_loop_delay_seconds) and by the fixed windows
// below (issue 33 item 3, event_loop_window_delay_seconds).
//
// The monitor is a 10 ms timer that records how long it really took between
// its runs: the interval plus how late it ran. Its maximum is a lower bound
// of the longest single task the loop ran, close to it once many tasks were
// sampled (a task of L ms makes the timer up to L ms late, depending on when
// in the 10 ms it began). On a core shared with other threads, time the loop
// was preempted counts too.
//
// It runs only while the process has work. A timer every 10 ms woke an idle
// process 100 times a second, in every process of the instance (issue 32,
// measured: 6 of an idle worker's 11 ms of CPU a second, and 6.5 of the
// primary's 7). Work is announced (a request, a worker's message, a shard's
// commands: work()) and resumes the monitor at once; once a second a running
// monitor pauses if none was announced, the process says it is idle (no
// request in flight) and its loop ran less than BUSY_LOOP_MS. A paused one
// checks that last figure once a second too, so work nobody announces
// resumes it within a second. While paused nothing is late: a reader that
// saw no sample but a pause reads the loop as on time.
import { createHistogram, performance, type EventLoopUtilization, type RecordableHistogram } from 'node:perf_hooks';

/** The monitor's timer, ms: what its figures hold beyond the delay (as Node's monitorEventLoopDelay, which it replaces). */
export const RESOLUTION_MS = 10;
const RESOLUTION_NS = RESOLUTION_MS * 1e6;
/** How often a running monitor asks whether the process is idle, and a paused one whether work it was not told of came. */
const IDLE_CHECK_MS = 1000;
/** Loop time in one check's second that keeps (or makes) the monitor run though no work was announced: 5%. */
const BUSY_LOOP_MS = 50;

/** One reader's figures since its last take, in ns of the timer's intervals (RESOLUTION_NS plus the delay). */
export interface LoopFigures {
  p50: number;
  p99: number;
  max: number;
}

/** What one reader has seen since it last took its figures. */
export class LoopReader {
  readonly histogram: RecordableHistogram = createHistogram();
  /** The monitor paused since the last take: the loop counts as on time for that while. */
  paused = false;

  constructor(private readonly monitor: LoopMonitor) {}

  /** The figures since the last take, and a new start; null when it has seen nothing (no sample, no pause). */
  take(): LoopFigures | null {
    const h = this.histogram;
    let figures: LoopFigures | null = null;
    if (h.count > 0) figures = { p50: h.percentile(50), p99: h.percentile(99), max: h.max };
    else if (this.paused) figures = { p50: RESOLUTION_NS, p99: RESOLUTION_NS, max: RESOLUTION_NS };
    h.reset();
    this.paused = !this.monitor.running;
    return figures;
  }
}

class LoopMonitor {
  private readonly readers = new Set<LoopReader>();
  /** The 10 ms timer; null while paused (or while nobody reads). */
  private ticker: NodeJS.Timeout | null = null;
  private lastTick = 0;
  /** The once-a-second check; null until the process says how to tell it is idle. */
  private checker: NodeJS.Timeout | null = null;
  private idle: (() => boolean) | null = null;
  private announced = false;
  private loopAtCheck: EventLoopUtilization = performance.eventLoopUtilization();

  /** Whether the timer runs now (false: paused, the process idle). */
  get running(): boolean {
    return this.ticker !== null;
  }

  reader(): LoopReader {
    const r = new LoopReader(this);
    this.readers.add(r);
    if (this.ticker === null) this.resume();
    return r;
  }

  drop(r: LoopReader): void {
    this.readers.delete(r);
    if (this.readers.size === 0) this.pause();
  }

  /**
   * Work began (a request, a message from a worker): the monitor runs. On
   * every request's path, so it is a store and a test when the monitor runs.
   */
  work(): void {
    this.announced = true;
    if (this.ticker === null && this.readers.size > 0) this.resume();
  }

  /** From now on the monitor pauses while the process is idle: `idle` says whether it has work in hand (requests in flight). */
  pauseWhenIdle(idle: () => boolean): void {
    this.idle = idle;
    if (this.checker !== null) return;
    this.checker = setInterval(() => this.check(), IDLE_CHECK_MS);
    this.checker.unref();
  }

  /** Stops pausing: the monitor runs whenever somebody reads (tests). */
  stopPausing(): void {
    if (this.checker !== null) clearInterval(this.checker);
    this.checker = null;
    this.idle = null;
    if (this.ticker === null && this.readers.size > 0) this.resume();
  }

  private check(): void {
    const loop = performance.eventLoopUtilization(this.loopAtCheck);
    this.loopAtCheck = performance.eventLoopUtilization();
    const busy = this.announced || loop.active >= BUSY_LOOP_MS || !this.idle!();
    this.announced = false;
    if (busy && this.ticker === null && this.readers.size > 0) this.resume();
    else if (!busy && this.ticker !== null) this.pause();
  }

  private resume(): void {
    this.lastTick = performance.now();
    this.ticker = setInterval(() => this.tick(), RESOLUTION_MS);
    this.ticker.unref();
  }

  private pause(): void {
    if (this.ticker === null) return;
    clearInterval(this.ticker);
    this.ticker = null;
    for (const r of this.readers) r.paused = true;
  }

  private tick(): void {
    const now = performance.now();
    const ns = Math.max(1, Math.round((now - this.lastTick) * 1e6));
    this.lastTick = now;
    for (const r of this.readers) r.histogram.record(ns);
  }
}

/** The process's one monitor (one event loop per process). */
export const loopMonitor = new LoopMonitor();

/** A monitor figure (ns, one timer interval) as the delay in seconds. */
const delaySeconds = (ns: number): number => Math.max(0, ns / 1e6 - RESOLUTION_MS) / 1000;

/** How long a window lasts: long enough to hold a rare stall, short enough that a past one ages out within a minute. */
export const LOOP_WINDOW_MS = 60_000;

/**
 * The p99 and the maximum of the last complete window (issue 33 item 3).
 * Unlike event_loop_delay_seconds (emptied by every scrape), what this
 * reports does not depend on who scrapes or how often: two scrapers, or a
 * bench scraping around its jobs beside Prometheus, read the same figures.
 * Reported is the delay alone, how late the timer ran.
 */
export class EventLoopWindow {
  private readonly reader = loopMonitor.reader();
  private readonly timer: NodeJS.Timeout;
  /** The last complete window's figures, in seconds; null until one has passed (or when it saw nothing). */
  private last: { p99: number; max: number } | null = null;

  constructor(
    private readonly role: string,
    windowMs = LOOP_WINDOW_MS,
  ) {
    this.timer = setInterval(() => this.rotate(), windowMs);
    // Never what keeps a process alive.
    this.timer.unref();
  }

  private rotate(): void {
    const f = this.reader.take();
    this.last = f === null ? null : { p99: delaySeconds(f.p99), max: delaySeconds(f.max) };
  }

  /** The series for Metrics.addGauges: event_loop_window_delay_seconds{role,pid,quantile}. */
  gauges(): Record<string, number> {
    if (this.last === null) return {};
    const who = `role="${this.role}",pid="${process.pid}"`;
    return {
      [`event_loop_window_delay_seconds{${who},quantile="0.99"}`]: this.last.p99,
      [`event_loop_window_delay_seconds{${who},quantile="1"}`]: this.last.max,
    };
  }

  stop(): void {
    clearInterval(this.timer);
    loopMonitor.drop(this.reader);
  }
}
