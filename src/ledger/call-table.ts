// Calls in progress by request id, for a registry that every call enters and
// leaves once (a worker's allotments: thousands of calls a second).
//
// Not a Map, for the collector's sake. V8 rebuilds a Map's hash table when
// deletions leave it less than half full, and when deleted entries fill it;
// once the Map has lived long enough to sit in the old generation, the new
// table is allocated there too. Measured on Node 20 with a Map promoted before
// the loop: 60–150 bytes of old-generation garbage per set and delete, at any
// size. Three such Maps on a unary call's path made ~450 bytes a call at one
// connection, a third of what filled the worker's old generation and brought
// a full collection (a 5–7 ms pause) every ~3.5 s (docs/performance.md, "The
// one-connection tail, call by call").
//
// Here: open addressing with linear probing over arrays that are allocated
// only when the table grows, and deletion by backward shift, which leaves no
// tombstones behind, so a table at a steady size allocates nothing. The hash
// is seeded per process: request ids are the gateway's own, but a caller
// cannot line up keys on one probe run even if one ever chose them.
import { randomInt } from 'node:crypto';

const MIN_CAPACITY = 64;
/** A table this large shrinks once it is a sixteenth full (a burst of calls in progress does not keep its memory for ever). */
const SHRINK_ABOVE = 4096;
const SEED = randomInt(0x7fffffff);

/** FNV-1a over the key's UTF-16 code units, from a per-process seed. */
function hashOf(key: string): number {
  let h = 0x811c9dc5 ^ SEED;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return h;
}

export class CallTable<V> {
  private keys: Array<string | undefined> = [];
  private values: Array<V | undefined> = [];
  private hashes = new Int32Array(0);
  /** Capacity − 1 (the capacity is a power of two). */
  private mask = 0;
  private count = 0;

  constructor() {
    this.allocate(MIN_CAPACITY);
  }

  get size(): number {
    return this.count;
  }

  get(key: string): V | undefined {
    const i = this.slotOf(key);
    return i < 0 ? undefined : this.values[i];
  }

  has(key: string): boolean {
    return this.slotOf(key) >= 0;
  }

  set(key: string, value: V): void {
    const h = hashOf(key);
    let i = h & this.mask;
    for (let k = this.keys[i]; k !== undefined; k = this.keys[i]) {
      if (this.hashes[i] === h && k === key) {
        this.values[i] = value;
        return;
      }
      i = (i + 1) & this.mask;
    }
    this.keys[i] = key;
    this.values[i] = value;
    this.hashes[i] = h;
    this.count++;
    if (this.count * 2 > this.mask + 1) this.resize((this.mask + 1) * 2);
  }

  delete(key: string): boolean {
    const slot = this.slotOf(key);
    if (slot < 0) return false;
    this.removeAt(slot);
    return true;
  }

  /** Removes `key` and returns its value (undefined: not here): one lookup where get and delete make two. */
  take(key: string): V | undefined {
    const slot = this.slotOf(key);
    if (slot < 0) return undefined;
    const value = this.values[slot];
    this.removeAt(slot);
    return value;
  }

  /** Each entry, in no particular order; `fn` must not change the table. */
  forEach(fn: (value: V, key: string) => void): void {
    for (let i = 0; i <= this.mask; i++) {
      const k = this.keys[i];
      if (k !== undefined) fn(this.values[i]!, k);
    }
  }

  private slotOf(key: string): number {
    const h = hashOf(key);
    for (let i = h & this.mask; ; i = (i + 1) & this.mask) {
      const k = this.keys[i];
      if (k === undefined) return -1;
      if (this.hashes[i] === h && k === key) return i;
    }
  }

  private removeAt(slot: number): void {
    let gap = slot;
    this.count--;
    // Backward shift: an entry further along the probe run moves into the gap
    // unless its home slot lies after the gap (cyclically), where a lookup
    // for it would start past the gap and never see it there.
    for (let j = (gap + 1) & this.mask; this.keys[j] !== undefined; j = (j + 1) & this.mask) {
      const home = this.hashes[j]! & this.mask;
      if (((j - home) & this.mask) >= ((j - gap) & this.mask)) {
        this.keys[gap] = this.keys[j];
        this.values[gap] = this.values[j];
        this.hashes[gap] = this.hashes[j]!;
        gap = j;
      }
    }
    this.keys[gap] = undefined;
    this.values[gap] = undefined;
    const capacity = this.mask + 1;
    if (capacity > SHRINK_ABOVE && this.count * 16 < capacity) this.resize(capacity / 4);
  }

  private allocate(capacity: number): void {
    this.keys = new Array<string | undefined>(capacity).fill(undefined);
    this.values = new Array<V | undefined>(capacity).fill(undefined);
    this.hashes = new Int32Array(capacity);
    this.mask = capacity - 1;
    this.count = 0;
  }

  private resize(capacity: number): void {
    const { keys, values } = this;
    this.allocate(Math.max(MIN_CAPACITY, capacity));
    for (let i = 0; i < keys.length; i++) if (keys[i] !== undefined) this.set(keys[i]!, values[i]!);
  }
}
