// The per-key concurrency cap (billing.max_concurrent_per_key): how many
// model calls and count_tokens calls together one API key may have in
// progress on this worker. Taken right after authentication, before the body
// is parsed or any money is reserved, and given back exactly once when the
// call ends, whatever its outcome (pipeline/run.ts and local.ts hold it in a
// try/finally).
//
// Counted per HTTP worker, not per instance: the count lives where the calls
// run, costs a Map update and no round trip, and a worker's crash frees its
// slots with it. An instance therefore admits up to workers × the cap per key.
//
// A key's count stays in the Map at zero: deleting it when its last call ends
// would make V8 rebuild the Map's table, in the old generation, about once a
// call (ledger/call-table.ts says why that matters). A worker that has seen
// more than PRUNE_ABOVE keys forgets each one whose calls have ended.
import { GatewayError } from '../errors/gateway-error.js';

const PRUNE_ABOVE = 4096;

export class KeySlots {
  private readonly inUse = new Map<string, number>();

  constructor(readonly max: number) {}

  /** Takes one of `keyId`'s slots, or refuses with 429 concurrency_limited. */
  take(keyId: string): void {
    const n = this.inUse.get(keyId) ?? 0;
    if (n >= this.max) {
      throw new GatewayError('concurrency_limited', { retryAfterSeconds: 1, limit: { kind: 'concurrent_calls_per_key', max: this.max } });
    }
    this.inUse.set(keyId, n + 1);
  }

  /** Gives one slot back (the caller guarantees once per take). */
  release(keyId: string): void {
    const n = this.inUse.get(keyId) ?? 0;
    if (n <= 1 && this.inUse.size > PRUNE_ABOVE) this.inUse.delete(keyId);
    else this.inUse.set(keyId, Math.max(0, n - 1));
  }

  /** Calls in progress for `keyId` on this worker. */
  inProgress(keyId: string): number {
    return this.inUse.get(keyId) ?? 0;
  }
}
