// The V8 heap flags of an HTTP worker process (the memory.* settings),
// passed on its command line by the primary: V8 sizes a heap when the process
// starts, so they cannot be set later from inside it.
import type { Config } from '../config/types.js';

/**
 * An HTTP worker's V8 heap flags (memory.* settings). Left alone, V8 sizes a
 * heap for the machine's memory: a 32 MB young generation and an old
 * generation allowed to grow to several times what is live before a full
 * collection, so a worker whose live heap is ~25 MB sat at 110–120 MB of heap
 * (docs/performance.md, "Memory").
 */
export function workerHeapFlags(memory: Config['memory']): string[] {
  const flags: string[] = [];
  if (memory.semi_space_mb > 0) flags.push(`--max-semi-space-size=${memory.semi_space_mb}`);
  if (memory.heap_growing_percent > 0) flags.push(`--heap-growing-percent=${memory.heap_growing_percent}`);
  return flags;
}
