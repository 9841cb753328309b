// The per-worker set of every live key, by hash, so that an unknown key is
// refused in memory: no database query and no allocation that outlives the
// request, however many distinct keys a flood presents.
//
// It holds a 64-bit fingerprint of each key's SHA-256 (its first 8 bytes) and
// the key's expiry, in an open-addressing table of typed arrays: 17 bytes a
// slot at a load factor ≤ 0.5, about 34–68 bytes per key, so millions of keys
// cost tens of MB (a Set of hash strings would cost ~100 bytes per key and
// churn the GC). A fingerprint match is only a pre-filter: the full hash is
// compared (in constant time) against the key record before anything is
// allowed, so a 2^-64 collision costs one database lookup, never access.
//
// The expiry is kept to the millisecond, as the key record holds it: a key
// rounded up to its second would pass this check for up to a second after it
// expired and be refused later, by the record, on a path that reads the body
// and keeps the connection (a refusal told apart from the others by its
// timing and its headers).
//
// Lookups probe by fingerprint bits the caller controls only through SHA-256,
// so probe timing says nothing about any stored key.

const EMPTY = 0;
const FULL = 1;
const DELETED = 2;
const MIN_CAPACITY = 1024;

export class LiveKeyIndex {
  private capacity = 0;
  private mask = 0;
  private hi = new Uint32Array(0);
  private lo = new Uint32Array(0);
  /** Expiry in ms since the epoch; Infinity for a key that never expires. */
  private exp = new Float64Array(0);
  private state = new Uint8Array(0);
  private full = 0;
  private deleted = 0;

  constructor(expectedKeys = 0) {
    this.allocate(LiveKeyIndex.capacityFor(expectedKeys));
  }

  private static capacityFor(keys: number): number {
    let cap = MIN_CAPACITY;
    while (cap < keys * 2) cap *= 2;
    return cap;
  }

  private allocate(capacity: number): void {
    this.capacity = capacity;
    this.mask = capacity - 1;
    this.hi = new Uint32Array(capacity);
    this.lo = new Uint32Array(capacity);
    this.exp = new Float64Array(capacity);
    this.state = new Uint8Array(capacity);
    this.full = 0;
    this.deleted = 0;
  }

  get size(): number {
    return this.full;
  }

  /** Bytes held by the table, for the operator's metrics. */
  get bytes(): number {
    return this.capacity * 17;
  }

  /** Slot of the fingerprint, or -1. */
  private find(h: number, l: number): number {
    let i = l & this.mask;
    for (;;) {
      const s = this.state[i];
      if (s === EMPTY) return -1;
      if (s === FULL && this.lo[i] === l && this.hi[i] === h) return i;
      i = (i + 1) & this.mask;
    }
  }

  /** Live = present and not past its expiry at `nowMs` (the record's rule: live while expiresAt > now). */
  isLive(hash: Buffer, nowMs: number): boolean {
    const i = this.find(hash.readUInt32LE(4), hash.readUInt32LE(0));
    return i >= 0 && nowMs < this.exp[i];
  }

  has(hash: Buffer): boolean {
    return this.find(hash.readUInt32LE(4), hash.readUInt32LE(0)) >= 0;
  }

  /** Adds or updates a live key; `expiresAtMs` null for a key that never expires. */
  set(hash: Buffer, expiresAtMs: number | null): void {
    const expiry = expiresAtMs ?? Infinity;
    const h = hash.readUInt32LE(4);
    const l = hash.readUInt32LE(0);
    const found = this.find(h, l);
    if (found >= 0) {
      this.exp[found] = expiry;
      return;
    }
    if ((this.full + this.deleted + 1) * 2 > this.capacity) this.rehash();
    let i = l & this.mask;
    while (this.state[i] === FULL) i = (i + 1) & this.mask;
    if (this.state[i] === DELETED) this.deleted--;
    this.state[i] = FULL;
    this.hi[i] = h;
    this.lo[i] = l;
    this.exp[i] = expiry;
    this.full++;
  }

  delete(hash: Buffer): void {
    const i = this.find(hash.readUInt32LE(4), hash.readUInt32LE(0));
    if (i < 0) return;
    this.state[i] = DELETED;
    this.full--;
    this.deleted++;
  }

  /** Takes over another index's contents (a full reload built off to the side, swapped in at once). */
  adopt(other: LiveKeyIndex): void {
    this.capacity = other.capacity;
    this.mask = other.mask;
    this.hi = other.hi;
    this.lo = other.lo;
    this.exp = other.exp;
    this.state = other.state;
    this.full = other.full;
    this.deleted = other.deleted;
  }

  /**
   * Rebuilds with tombstones dropped, at a load of at most 1/4, so the next
   * rebuild is as many insertions away as there are keys (amortized O(1)).
   */
  private rehash(): void {
    const { hi, lo, exp, state, capacity } = this;
    this.allocate(LiveKeyIndex.capacityFor((this.full + 1) * 2));
    for (let i = 0; i < capacity; i++) {
      if (state[i] !== FULL) continue;
      let j = lo[i] & this.mask;
      while (this.state[j] !== EMPTY) j = (j + 1) & this.mask;
      this.state[j] = FULL;
      this.hi[j] = hi[i];
      this.lo[j] = lo[i];
      this.exp[j] = exp[i];
      this.full++;
    }
  }
}
