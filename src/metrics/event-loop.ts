// The event loop's delay over fixed windows (issue 33 item 3): the p99 and
// the maximum of the last complete window, per process. Unlike
// event_loop_delay_seconds (registry.ts, emptied by every scrape), what this
// reports does not depend on who scrapes or how often: two scrapers, or a
// bench scraping around its jobs beside Prometheus, read the same figures.
// Node's monitor records the time between its timer's runs (resolution 10 ms
// plus the delay); reported here is the delay alone, how late the timer ran.
// Its maximum is a lower bound of the longest single task the loop ran in the
// window, close to it once many tasks were sampled (a task of L ms makes the
// timer up to L ms late, depending on when in the 10 ms it began). On a core
// shared with other threads, time the loop was preempted counts too.
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';

/** The monitor's timer, ms: what Node's figures include beyond the delay. */
const RESOLUTION_MS = 10;

/** A monitor figure (ns, one timer interval) as the delay in seconds. */
const delaySeconds = (ns: number): number => Math.max(0, ns / 1e6 - RESOLUTION_MS) / 1000;

/** How long a window lasts: long enough to hold a rare stall, short enough that a past one ages out within a minute. */
export const LOOP_WINDOW_MS = 60_000;

export class EventLoopWindow {
  private readonly histogram: IntervalHistogram;
  private readonly timer: NodeJS.Timeout;
  /** The last complete window's figures, in seconds; null until one has passed (or when it saw no sample). */
  private last: { p99: number; max: number } | null = null;

  constructor(
    private readonly role: string,
    windowMs = LOOP_WINDOW_MS,
  ) {
    this.histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
    this.histogram.enable();
    this.timer = setInterval(() => this.rotate(), windowMs);
    // Never what keeps a process alive.
    this.timer.unref();
  }

  private rotate(): void {
    const h = this.histogram;
    this.last = h.count > 0 ? { p99: delaySeconds(h.percentile(99)), max: delaySeconds(h.max) } : null;
    h.reset();
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
    this.histogram.disable();
  }
}
