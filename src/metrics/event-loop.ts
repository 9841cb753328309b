// The event loop's delay, read by the per-scrape summary (registry.ts,
// event_loop_delay_seconds) and by the fixed windows below (issue 33 item 3,
// event_loop_window_delay_seconds). Each reader has its own monitor of
// Node's (monitorEventLoopDelay: its figures reset when that reader reads
// them), a 10 ms timer that records how long it really took between its runs:
// the interval plus how late it ran. Its maximum is a lower bound of the
// longest single task the loop ran, close to it once many tasks were sampled
// (a task of L ms makes the timer up to L ms late, depending on when in the
// 10 ms it began). On a core shared with other threads, time the loop was
// preempted counts too.
//
// The monitors run only while the process has work. Their timers woke an
// idle process 100 times a second, in every process of the instance (issue
// 32, measured: 6 of an idle worker's 11 ms of CPU a second, and 6.5 of the
// primary's 7). Work is announced (a request, a ledger command: work()) and
// resumes them at once; once a second running monitors pause if none was
// announced, the process says it is idle (no request in flight) and its loop
// ran less than BUSY_LOOP_MS. Paused, the check goes on once a second, so
// work nobody announces resumes them within a second. While paused nothing
// is late: a reader that saw no sample but a pause reads the loop as on time.
// Node's own timer, not one of ours: a JavaScript interval cost 2.5 times as
// much per run on the development VM (250 against 100 µs when it wakes the
// process), which a lightly loaded process, woken by the timer, would pay.
import { monitorEventLoopDelay, performance, type EventLoopUtilization, type IntervalHistogram } from 'node:perf_hooks';

/** The monitors' timer, ms: what their figures hold beyond the delay. */
const RESOLUTION_MS = 10;
const RESOLUTION_NS = RESOLUTION_MS * 1e6;
/** How often running monitors ask whether the process is idle, and paused ones whether work they were not told of came. */
const IDLE_CHECK_MS = 1000;
/** Loop time in one check's second that keeps (or makes) the monitors run though no work was announced: 5%. */
const BUSY_LOOP_MS = 50;

/** A reader's figures since its last take, in ns of the timer's intervals (RESOLUTION_NS plus the delay). */
export interface LoopFigures {
  p50: number;
  p99: number;
  max: number;
}

const ON_TIME: LoopFigures = { p50: RESOLUTION_NS, p99: RESOLUTION_NS, max: RESOLUTION_NS };

function figuresOf(h: IntervalHistogram): LoopFigures | null {
  return h.count > 0 ? { p50: h.percentile(50), p99: h.percentile(99), max: h.max } : null;
}

/** Two stretches' figures as one: exact for the maximum, an upper bound for each percentile (at most 1% of either lies above the larger p99). */
function merged(a: LoopFigures | null, b: LoopFigures | null): LoopFigures | null {
  if (a === null || b === null) return a ?? b;
  return { p50: Math.max(a.p50, b.p50), p99: Math.max(a.p99, b.p99), max: Math.max(a.max, b.max) };
}

/** One reader's monitor and what it has seen since its last take. */
export class LoopReader {
  private readonly monitor = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  /** The stretches before the monitor's pauses since the last take (a monitor resumed with their samples would count the pause as a delay). */
  private earlier: LoopFigures | null = null;
  /** The monitor paused since the last take: the loop counts as on time for that while. */
  private paused = false;
  /** The task it resumed in, when that ran past one interval (a resumed monitor's first interval is not sampled). */
  private resumedLate = 0;

  start(): void {
    this.monitor.enable();
  }

  stop(): void {
    this.monitor.disable();
    this.earlier = merged(this.earlier, figuresOf(this.monitor));
    // A reset monitor records nothing for its first interval after enable(): no sample spans the pause.
    this.monitor.reset();
    this.paused = true;
  }

  late(ns: number): void {
    this.resumedLate = Math.max(this.resumedLate, ns);
  }

  /** The figures since the last take, and a new start; null when it has seen nothing (no sample, no pause). `running`: whether the monitors run now. */
  take(running: boolean): LoopFigures | null {
    let f = merged(this.earlier, figuresOf(this.monitor)) ?? (this.paused || this.resumedLate > 0 ? ON_TIME : null);
    if (f !== null && this.resumedLate > f.max) f = { ...f, max: this.resumedLate };
    this.monitor.reset();
    this.earlier = null;
    this.resumedLate = 0;
    this.paused = !running;
    return f;
  }
}

class LoopMonitor {
  private readonly readers = new Set<LoopReader>();
  private on = true;
  /** The once-a-second check; null until the process says how to tell it is idle. */
  private checker: NodeJS.Timeout | null = null;
  private idle: (() => boolean) | null = null;
  private announced = false;
  private loopAtCheck: EventLoopUtilization = performance.eventLoopUtilization();

  /** Whether the monitors run now (false: paused, the process idle). */
  get running(): boolean {
    return this.on;
  }

  reader(): LoopReader {
    const r = new LoopReader();
    this.readers.add(r);
    if (this.on) r.start();
    else r.stop();
    return r;
  }

  drop(r: LoopReader): void {
    if (this.readers.delete(r)) r.stop();
  }

  /** The figures `r` has seen since its last take (LoopReader.take). */
  take(r: LoopReader): LoopFigures | null {
    return r.take(this.on);
  }

  /**
   * Work began (a request, a command from a worker): the monitors run. On
   * every request's path, so it is a store and a test while they run.
   */
  work(): void {
    this.announced = true;
    if (!this.on) this.resume();
  }

  /** From now on the monitors pause while the process is idle: `idle` says whether it has no work in hand (no request in flight). */
  pauseWhenIdle(idle: () => boolean): void {
    this.idle = idle;
    if (this.checker !== null) return;
    this.checker = setInterval(() => this.check(), IDLE_CHECK_MS);
    this.checker.unref();
  }

  /** Stops pausing: the monitors run from now on (tests). */
  stopPausing(): void {
    if (this.checker !== null) clearInterval(this.checker);
    this.checker = null;
    this.idle = null;
    if (!this.on) this.resume();
  }

  private check(): void {
    const loop = performance.eventLoopUtilization(this.loopAtCheck);
    this.loopAtCheck = performance.eventLoopUtilization();
    const busy = this.announced || loop.active >= BUSY_LOOP_MS || !this.idle!();
    this.announced = false;
    if (busy && !this.on) this.resume();
    else if (!busy && this.on) this.pause();
  }

  private resume(): void {
    this.on = true;
    for (const r of this.readers) r.start();
    // The task that announced the work runs on unsampled: how long it and the rest of its turn took, seen after them.
    const from = performance.now();
    setImmediate(() => {
      const ns = Math.round((performance.now() - from) * 1e6);
      if (ns > RESOLUTION_NS) for (const r of this.readers) r.late(ns);
    });
  }

  private pause(): void {
    this.on = false;
    for (const r of this.readers) r.stop();
  }
}

/** The process's monitors (one event loop per process). */
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
    const f = loopMonitor.take(this.reader);
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
