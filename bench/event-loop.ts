// The HTTP workers' event-loop delay during a job, read from the target's
// /metrics (event_loop_delay_seconds: each process's delay since the previous
// scrape, sampled by Node's monitorEventLoopDelay; every build since issue 16
// reports it, so a before build is measured the same way). A scrape before
// the job empties every process's window; the scrape after it reads the
// job's alone (its warm-up included). Both are taken outside the CPU the
// bench attributes to the job's calls (measure.ts). Node's figures are intervals of its 10 ms timer: the
// delay is what exceeds 10 ms. The largest delay is a lower bound of the
// longest single task the loop ran, close to it over many tasks (a task of
// L ms delays the timer by up to L ms, depending on when in the 10 ms it
// began); on a core shared with the pool thread, time the loop was preempted
// counts as delay too. The p99 is how late the loop was in the worst 1%.

/** The workers' figures over one job, in ms: the largest maximum and the largest p99 of any worker. */
export interface LoopDelay {
  maxMs: number;
  p99Ms: number;
}

/** The monitor's timer in every build (src/metrics/registry.ts): its figures are this plus the delay. */
const RESOLUTION_MS = 10;

const SERIES = /^tollgate_event_loop_delay_seconds\{([^}]*)\}\s+(\S+)$/;

/** The workers' delays in a scrape's text; null when it has none (the target does not report them). */
export function workersLoopDelay(text: string): LoopDelay | null {
  let maxMs = -1;
  let p99Ms = -1;
  for (const line of text.split('\n')) {
    const m = SERIES.exec(line);
    if (m === null || !m[1]!.includes('role="worker"')) continue;
    const ms = Math.max(0, Number(m[2]) * 1000 - RESOLUTION_MS);
    if (m[1]!.includes('quantile="1"')) maxMs = Math.max(maxMs, ms);
    else if (m[1]!.includes('quantile="0.99"')) p99Ms = Math.max(p99Ms, ms);
  }
  return maxMs < 0 ? null : { maxMs, p99Ms: Math.max(p99Ms, 0) };
}

/** One scrape; null when the target has no metrics listener or it did not answer. */
export async function scrapeLoopDelay(metricsUrl: string | undefined): Promise<LoopDelay | null> {
  if (metricsUrl === undefined) return null;
  try {
    const res = await fetch(metricsUrl, { signal: AbortSignal.timeout(5000) });
    return res.ok ? workersLoopDelay(await res.text()) : null;
  } catch {
    return null;
  }
}
