// The key check every authenticated operation runs.
//
// One code path for every refusal: the presented key (or, when there is none
// or it is malformed, a decoy of the same length) is hashed, and one probe of
// the in-memory live-key index decides no header, malformed, unknown, revoked
// (removed from the index) and expired (the index holds expiries) alike, with
// the same work done and no database query. Only a live key goes further: its
// record comes from the warm cache, or once from the store, and its stored
// hash is compared with the presented one in constant time.
//
// Lookups go by SHA-256 of the key, so timing can tell an attacker at most
// something about hashes of strings they chose, never about a stored key.
import { timingSafeEqual } from 'node:crypto';
import { GatewayError } from '../errors/gateway-error.js';
import type { Logger } from '../log/logger.js';
import type { Metrics } from '../metrics/registry.js';
import type { Pool } from '../store/pool.js';
import { presentedKey } from './carriers.js';
import { DECOY_KEY, hashKey } from './key-format.js';
import type { LiveKeyIndex } from './key-index.js';
import { findKeyByHash, toApiKey } from './key-store.js';
import { identityEcho } from './key-view.js';
import type { ApiKey, Authenticator, Carrier } from './types.js';

/** The hash looked up: the presented key's, or a decoy's of the same length when there is none or it is malformed. */
function presentedHash(authorization: string, xApiKey: string, carrier: Carrier): Buffer {
  const token = presentedKey(authorization, xApiKey, carrier);
  return hashKey(token === '' ? DECOY_KEY : token);
}

const keyOf = (warm: WarmKey | null): ApiKey | null => (warm === null ? null : warm.key);

/** Safety net behind the change log and the bus: a warm record is re-read at least this often. */
export const CACHE_TTL_MS = 60_000;
/** Warm records kept per worker; beyond this the oldest is dropped (it is re-read on its next use). */
export const CACHE_MAX = 100_000;
/** Counter of key reads from the store (tollgate_key_store_lookups_total). */
export const LOOKUP_COUNTER = 'key_store_lookups';
export const REFUSAL_COUNTER = 'auth_refusals';

export interface WarmKey {
  key: ApiKey;
  hash: Buffer;
  /** GET /v1/key's body, rendered once per record. */
  echo: string;
  fetchedAt: number;
}

export class KeyAuthenticator implements Authenticator {
  private readonly cache = new Map<string, WarmKey>();
  private readonly loading = new Map<string, Promise<WarmKey | null>>();
  private lastStoreWarning = 0;
  /**
   * Bumped by every forget(): a store read that started before a change must
   * not put the record it read (from before the change) back in the cache.
   */
  private generation = 0;

  constructor(
    private readonly pool: Pool,
    private readonly index: LiveKeyIndex,
    private readonly metrics: Metrics,
    private readonly logger: Logger,
  ) {
    metrics.count(LOOKUP_COUNTER, 0);
    metrics.count(REFUSAL_COUNTER, 0);
  }

  /** A promise only when the key's record must be read from the store (lookup()). */
  authenticate(authorization: string, xApiKey: string, carrier: Carrier, presented: Buffer | null = null): ApiKey | null | Promise<ApiKey | null> {
    const warm = this.lookup(authorization, xApiKey, carrier, presented);
    return warm instanceof Promise ? warm.then(keyOf) : keyOf(warm);
  }

  precheck(authorization: string, xApiKey: string, carrier: Carrier): Buffer | null {
    const hash = presentedHash(authorization, xApiKey, carrier);
    if (this.index.isLive(hash, Date.now())) return hash;
    this.metrics.count(REFUSAL_COUNTER);
    return null;
  }

  /**
   * As authenticate(), with the pre-rendered identity echo. Judged at once
   * when the key's record is cached (the common call: no promise made), after
   * the store's answer when it is not.
   */
  lookup(authorization: string, xApiKey: string, carrier: Carrier, presented: Buffer | null = null): WarmKey | null | Promise<WarmKey | null> {
    const hash = presented ?? presentedHash(authorization, xApiKey, carrier);
    const now = Date.now();
    if (!this.index.isLive(hash, now)) {
      this.metrics.count(REFUSAL_COUNTER);
      return null;
    }
    const warm = this.record(hash, now);
    return warm instanceof Promise ? warm.then((w) => this.judge(w, hash, now)) : this.judge(warm, hash, now);
  }

  /** The fingerprint index is a pre-filter: the whole hash decides, in constant time. */
  private judge(warm: WarmKey | null, hash: Buffer, now: number): WarmKey | null {
    const ok = warm !== null && timingSafeEqual(warm.hash, hash) && (warm.key.expiresAt === null || warm.key.expiresAt > now);
    if (!ok) this.metrics.count(REFUSAL_COUNTER);
    return ok ? warm : null;
  }

  /** Drops a cached record (its key changed); the next use re-reads it. */
  forget(hash: Buffer): void {
    this.generation++;
    this.cache.delete(hash.toString('base64'));
  }

  get cachedCount(): number {
    return this.cache.size;
  }

  private record(hash: Buffer, now: number): Promise<WarmKey | null> | WarmKey | null {
    const id = hash.toString('base64');
    const warm = this.cache.get(id);
    if (warm !== undefined && now - warm.fetchedAt < CACHE_TTL_MS) return warm;
    let pending = this.loading.get(id);
    if (pending === undefined) {
      // Concurrent first uses of one key share one read.
      pending = this.fetch(id, hash, warm ?? null).finally(() => this.loading.delete(id));
      this.loading.set(id, pending);
    }
    return pending;
  }

  private async fetch(id: string, hash: Buffer, stale: WarmKey | null): Promise<WarmKey | null> {
    this.metrics.count(LOOKUP_COUNTER);
    const generation = this.generation;
    let row;
    try {
      row = await findKeyByHash(this.pool, hash);
    } catch (err) {
      // The store is unreachable: a key already warm keeps working (the
      // index still tracks revocations); a cold one cannot be checked.
      if (Date.now() - this.lastStoreWarning > 10_000) {
        this.lastStoreWarning = Date.now();
        this.logger.warn({ err: (err as Error).message }, 'key store read failed');
      }
      if (stale !== null) return stale;
      throw new GatewayError('service_unavailable');
    }
    if (row === null || row.revoked_at !== null) {
      this.cache.delete(id);
      // The index is behind the store (a change not yet polled): catch it up now.
      if (row !== null) this.index.delete(hash);
      return null;
    }
    const key = toApiKey(row);
    const warm: WarmKey = { key, hash: row.key_hash, echo: identityEcho(key), fetchedAt: Date.now() };
    // Answer this request with what was read, but cache it only if no change arrived meanwhile.
    if (generation !== this.generation) return warm;
    if (this.cache.size >= CACHE_MAX && !this.cache.has(id)) {
      // Map iteration order is insertion order: the first entry is the oldest.
      this.cache.delete(this.cache.keys().next().value!);
    }
    this.cache.set(id, warm);
    return warm;
  }
}
