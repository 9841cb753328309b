// Per-key request quotas (issue 35): a key may carry its own limit on calls
// per sliding minute, as a paid API's keys do (OpenAI's and LiteLLM's per-key
// RPM). Kept in the organization's actor beside the organization's quota, so
// it is exact however many workers (or instances) the key's calls arrive at:
// every call of a key with a quota is reserved here, never from a worker's
// allotment (allotments.ts), which counts an organization's calls, not a
// key's. The limit travels with each reservation (ReserveRequest.keyQuota),
// so an edit counts from the key's next call; a window is dropped once it has
// counted nothing for a minute (quota.ts QuotaWindows).
import { QuotaWindows, type QuotaRefusal } from './quota.js';

export class KeyQuotas {
  private readonly windows = new QuotaWindows();

  /** Admits (and counts) one call of key `keyId` at `now` under `perMinute`, or says why not and for how long. */
  admit(keyId: string, perMinute: number, now: number): QuotaRefusal | null {
    return this.windows.get(keyId, Infinity, perMinute, now).admit(now);
  }

  /** The call admitted at `now` was refused by the organization's quota: it does not count against the key either. */
  refund(keyId: string, now: number): void {
    this.windows.peek(keyId)?.refund(Math.floor(now / 1000), 1);
  }

  /** Windows open now (for tests and the account view's sake). */
  get size(): number {
    return this.windows.size;
  }
}
