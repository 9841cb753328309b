// A supplier that keeps failing is skipped for a cool-down, so calls stop
// paying its timeout. Consecutive failures open it; the first success after
// the cool-down (a trial call) closes it.
import type { Logger } from '../log/logger.js';

interface State {
  failures: number;
  openUntil: number;
}

export class CircuitBreaker {
  private readonly states = new Map<string, State>();

  constructor(
    private readonly threshold: number,
    private readonly cooldownMs: number,
    private readonly logger: Logger,
  ) {}

  isOpen(supplier: string, now = Date.now()): boolean {
    const s = this.states.get(supplier);
    return s !== undefined && s.openUntil > now;
  }

  failure(supplier: string, now = Date.now()): void {
    const s = this.states.get(supplier) ?? { failures: 0, openUntil: 0 };
    s.failures++;
    if (s.failures >= this.threshold && s.openUntil <= now) {
      s.openUntil = now + this.cooldownMs;
      this.logger.warn({ supplier, failures: s.failures, cooldownMs: this.cooldownMs }, 'supplier circuit opened: skipping it during the cool-down');
    }
    this.states.set(supplier, s);
  }

  /** For /metrics: 1 per supplier whose circuit is open in this process now (summed over the workers). */
  gauges(now = Date.now()): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [supplier, s] of this.states) if (s.openUntil > now) out[`supplier_circuit_open{supplier="${supplier}"}`] = 1;
    return out;
  }

  success(supplier: string): void {
    const s = this.states.get(supplier);
    if (s === undefined) return;
    if (s.failures >= this.threshold) this.logger.info({ supplier }, 'supplier circuit closed');
    this.states.delete(supplier);
  }
}
