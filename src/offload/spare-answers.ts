// The HTTP worker's half of surfaces/answer-bytes.ts: a large answer's buffer,
// moved in from a pool thread, goes back to a pool thread once the answer is
// written, with the next supplier request the fetch pool runs.
//
// Moving it out detaches it here, which takes its bytes off this isolate's
// external memory at once; left to the garbage collector, each 2.8 MB answer
// of a 128 × 3072 embeddings request (promoted to the old generation while it
// is written, over many tasks) counted against the old generation's slack
// until the next full collection, and started one every ~4 requests: pauses of
// 1.5–8 ms on the event loop (docs/performance.md, issue 33).

import { SPARE_MAX_BYTES } from '../surfaces/answer-bytes.js';

/** Below this a buffer could be Node's shared 8 KB slab: never handed anywhere. */
const MIN_BYTES = 64 * 1024;
/** Written answers' buffers kept for the next fetch task; more are left to the collector (a burst that outran the fetches). */
const KEPT = 4;

/** The byte members of a decoded reply (embeddings, images: `data`) that are views from offset 0 of a buffer of their own size class. */
function byteMembers(decoded: unknown): ArrayBuffer[] {
  if (decoded === null || typeof decoded !== 'object') return [];
  const buffers: ArrayBuffer[] = [];
  for (const value of Object.values(decoded as object)) {
    if (value instanceof Uint8Array && value.byteOffset === 0 && value.buffer instanceof ArrayBuffer && value.buffer.byteLength >= MIN_BYTES) buffers.push(value.buffer);
  }
  return buffers;
}

export class SpareAnswers {
  /** Buffers a pool thread moved here (its answer buffers: they hold that answer alone). */
  private readonly moved = new WeakSet<ArrayBuffer>();
  private spare: ArrayBuffer[] = [];

  /** A decoded reply just moved in from a pool thread. */
  received(decoded: unknown): void {
    for (const b of byteMembers(decoded)) this.moved.add(b);
  }

  /** The answer rendered from `decoded` is written whole (server/respond.ts, onWritten): its moved buffers may go back. */
  written(decoded: unknown): void {
    for (const b of byteMembers(decoded)) {
      if (!this.moved.has(b)) continue;
      this.moved.delete(b);
      // A very large one would not be kept by the thread either (answer-bytes.ts): the collector takes it here.
      if (this.spare.length < KEPT && b.byteLength <= SPARE_MAX_BYTES) this.spare.push(b);
    }
  }

  /** The buffers to move with the next fetch task, taken out (the task's transfer detaches them here). */
  take(): ArrayBuffer[] {
    if (this.spare.length === 0) return NONE;
    const taken = this.spare;
    this.spare = [];
    return taken;
  }

  /** Buffers waiting for a fetch task (tests). */
  get waiting(): number {
    return this.spare.length;
  }
}

const NONE: ArrayBuffer[] = [];
