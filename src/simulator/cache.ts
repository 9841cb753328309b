// A small first-in-first-out memo bounded both by entries and by the total
// length of its keys, so that a benchmark repeating one large body hits it
// while a stream of distinct large bodies cannot grow memory without bound.
export class BoundedCache<V> {
  private readonly map = new Map<string, V>();
  private chars = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly maxChars: number,
  ) {}

  get(key: string): V | undefined {
    return this.map.get(key);
  }

  set(key: string, value: V): void {
    if (key.length > this.maxChars || this.map.has(key)) return;
    this.chars += key.length;
    while (this.map.size >= this.maxEntries || this.chars > this.maxChars) {
      const oldest = this.map.keys().next();
      if (oldest.done === true) break;
      this.chars -= oldest.value.length;
      this.map.delete(oldest.value);
    }
    this.map.set(key, value);
  }
}
