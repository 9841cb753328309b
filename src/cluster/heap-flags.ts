// The V8 heap flags (the memory.* settings). An HTTP worker gets them on its
// command line from the primary: V8 sizes a heap when the process starts, so
// its young generation cannot be set later from inside it. The primary sets
// on itself, at its start, the one flag a running V8 still reads.
import type { Config } from '../config/types.js';

/**
 * An HTTP worker's V8 heap flags (memory.* settings). Left alone, V8 sizes a
 * heap for the machine's memory: a 32 MB young generation and an old
 * generation allowed to grow to several times what is live before a full
 * collection, so a worker whose live heap is ~25 MB sat at 110–120 MB of heap
 * (docs/performance.md, "Memory"). The defaults, 8 MB semi-spaces and 100%
 * growth, were measured against 2 MB and 50% (docs/performance.md, "The
 * worker's young generation"): a call's objects live while its supplier
 * answers, and 2 MB semi-spaces promoted them, so the worker paid for
 * minor collections on helper threads and for a full collection every ~20 s
 * of embeddings (a 3–4 ms task). Measured in one run: 19% less CPU per
 * unary call, 22% less per 100 KB body, no full collection in a minute of
 * embeddings; 35–50 MB more per worker on small calls, 80 MB more at the
 * peak of embeddings. The pool threads keep 2 MB semi-spaces (offload/pool.ts).
 *
 * The memory reducer is off by default (memory.reducer): it starts a full
 * collection, compacting every page, whenever the worker's allocation rate is
 * low — which is the case while it serves embeddings, whose work is in the
 * pool. Measured (issue 33, docs/performance.md): two of its collections in
 * 10 s of 128 × 3072 embeddings, each the longest task of that window
 * (5–20 ms); none with it off. An idle worker's heap then stays at what its
 * last full collection left, plus heap_growing_percent at most.
 */
export function workerHeapFlags(memory: Config['memory']): string[] {
  const flags: string[] = [];
  if (memory.semi_space_mb > 0) flags.push(`--max-semi-space-size=${memory.semi_space_mb}`);
  if (memory.heap_growing_percent > 0) flags.push(`--heap-growing-percent=${memory.heap_growing_percent}`);
  if (!memory.reducer) flags.push('--no-memory-reducer');
  return flags;
}

/**
 * What the primary sets on itself (v8.setFlagsFromString at its start): only
 * memory.heap_growing_percent, which V8 reads at each full collection. Its
 * young generation stays V8's default: the settlements it holds for the
 * journal live 0.1–1 s, which a 2 MB semi-space would promote. Measured
 * (2026-11-25, 60 s of unary at saturation, WORKERS=1 pinned to one core): the
 * primary's RSS 226 MB with V8's default growth against 160 MB at 50, at the
 * same CPU per call (41 against 39 µs).
 */
export function primaryHeapFlags(memory: Config['memory']): string[] {
  return memory.heap_growing_percent > 0 ? [`--heap-growing-percent=${memory.heap_growing_percent}`] : [];
}
