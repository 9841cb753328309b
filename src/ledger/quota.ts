// Per-organization request quotas: at most `perSecond` admissions in any one
// wall-clock second, and at most `perMinute` in the current second plus the 59
// before it (a sliding minute at one-second resolution). Sixty counters per
// organization, no timestamps per request, and an exact Retry-After: the
// number of whole seconds until enough of the oldest seconds leave the window.
import type { QuotaWindow } from './protocol.js';

const SECONDS = 60;

export interface QuotaRefusal {
  window: QuotaWindow;
  limit: number;
  /** Whole seconds, at least 1: when a retry would be admitted if nothing else arrives. */
  retryAfterSeconds: number;
}

export class RequestQuota {
  /** Which second each slot counts (slot = second mod 60); stale slots count nothing. */
  private readonly stamps = new Float64Array(SECONDS).fill(-1);
  private readonly counts = new Uint32Array(SECONDS);

  constructor(
    public perSecond: number,
    public perMinute: number,
  ) {}

  /** Admits (and counts) one request at `nowMs`, or says why not and for how long. */
  admit(nowMs: number): QuotaRefusal | null {
    const sec = Math.floor(nowMs / 1000);
    const slot = sec % SECONDS;
    if (this.stamps[slot] !== sec) {
      this.stamps[slot] = sec;
      this.counts[slot] = 0;
    }
    let refusal: QuotaRefusal | null = null;
    if (this.counts[slot] >= this.perSecond) {
      refusal = { window: 'per_second', limit: this.perSecond, retryAfterSeconds: wait(nowMs, sec + 1) };
    }
    const inMinute = this.inWindow(sec);
    if (inMinute >= this.perMinute) {
      // Walk from the oldest second in the window until the count falls below the limit.
      let left = inMinute;
      let s = sec - SECONDS + 1;
      for (; s <= sec; s++) {
        left -= this.at(s);
        if (left < this.perMinute) break;
      }
      // From second s + 60 on, seconds up to s have left the window.
      const retry = wait(nowMs, s + SECONDS);
      if (refusal === null || retry > refusal.retryAfterSeconds) refusal = { window: 'per_minute', limit: this.perMinute, retryAfterSeconds: retry };
    }
    if (refusal !== null) return refusal;
    this.counts[slot]++;
    return null;
  }

  /**
   * Admits up to `want` more requests at once for a worker's allotment
   * (allotments.ts), counted in this second now: never more than `share` of
   * what either window has left, so that a few allotments never take the
   * whole quota. Answers how many.
   */
  admitMany(nowMs: number, want: number, share: number): number {
    const sec = Math.floor(nowMs / 1000);
    const slot = sec % SECONDS;
    if (this.stamps[slot] !== sec) {
      this.stamps[slot] = sec;
      this.counts[slot] = 0;
    }
    const left = Math.min(this.perSecond - this.counts[slot], this.perMinute - this.inWindow(sec));
    const n = Math.max(0, Math.min(want, Math.floor(left * share)));
    this.counts[slot] += n;
    return n;
  }

  /** Admissions counted in second `sec` that were never used (an allotment's leftovers) leave both windows. */
  refund(sec: number, n: number): void {
    const slot = ((sec % SECONDS) + SECONDS) % SECONDS;
    if (this.stamps[slot] === sec) this.counts[slot] -= Math.min(n, this.counts[slot]);
  }

  /** Requests admitted in the minute ending with second `sec`. */
  inWindow(sec: number): number {
    let n = 0;
    for (let i = 0; i < SECONDS; i++) if (this.stamps[i] > sec - SECONDS && this.stamps[i] <= sec) n += this.counts[i];
    return n;
  }

  private at(sec: number): number {
    const slot = ((sec % SECONDS) + SECONDS) % SECONDS;
    return this.stamps[slot] === sec ? this.counts[slot] : 0;
  }
}

/** A quota unused this long has nothing left in either window (the current second and the 59 before it). */
const IDLE_MS = 61_000;

/**
 * A RequestQuota per id (an API key, an organization), made on first use and
 * forgotten once it has not been used for a whole minute (nothing it counted
 * is still in either window then), swept at most once a minute, so the map
 * holds only recent callers. The limits are read on every use, so an edit
 * counts from the next call.
 */
export class QuotaWindows {
  private readonly windows = new Map<string, { quota: RequestQuota; lastMs: number }>();
  private sweptAt = 0;

  /** `id`'s quota at `nowMs`, with these limits. */
  get(id: string, perSecond: number, perMinute: number, nowMs: number): RequestQuota {
    if (nowMs - this.sweptAt >= IDLE_MS) this.sweep(nowMs);
    let w = this.windows.get(id);
    if (w === undefined) this.windows.set(id, (w = { quota: new RequestQuota(perSecond, perMinute), lastMs: nowMs }));
    w.lastMs = nowMs;
    w.quota.perSecond = perSecond;
    w.quota.perMinute = perMinute;
    return w.quota;
  }

  /** `id`'s quota if one is kept (no use counted). */
  peek(id: string): RequestQuota | undefined {
    return this.windows.get(id)?.quota;
  }

  /** Ids with a quota kept (for tests). */
  get size(): number {
    return this.windows.size;
  }

  private sweep(nowMs: number): void {
    this.sweptAt = nowMs;
    for (const [id, w] of this.windows) if (nowMs - w.lastMs >= IDLE_MS) this.windows.delete(id);
  }
}

/** Whole seconds from nowMs until second `untilSec` begins, at least 1 (Retry-After has no zero). */
function wait(nowMs: number, untilSec: number): number {
  return Math.max(1, Math.ceil((untilSec * 1000 - nowMs) / 1000));
}
