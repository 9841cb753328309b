// A large answer's bytes (the `data` JSON of embeddings and images), written
// into a buffer the HTTP worker handed back once it had written the previous
// answer from it (offload/spare-answers.ts), rather than into new memory.
//
// Why (issue 33): a buffer moved into the HTTP worker counts there as external
// memory, and V8 starts a full collection once the external memory allocated
// since the last one eats the old generation's slack. A 2.8 MB answer per
// 128 × 3072 embeddings request did that every ~4 requests: a Mark-Compact of
// the worker's ~15 MB heap every ~0.5 s, its final pause 1.5–8 ms and its
// marking steps forced long (V8 marks harder under external memory pressure),
// each one a task no other call could run beside. Handed back, the buffer
// leaves the worker's accounting when it is moved out (detached), so the
// worker's external memory no longer grows per request. The buffer comes back
// to a pool thread, where it is written again: no fresh pages to fault in.
//
// Runs in the pool threads (and inline where a reply is small): its spare
// buffers are this thread's own.

/** Answers below this many characters are not worth a spare buffer: Buffer.from, as before (under 4 KB, a slice of Node's slab). */
const SPARE_MIN_CHARS = 64 * 1024;
/** A new answer buffer is rounded up to this, so that the next answers of about the same size fit it. */
const ANSWER_BUFFER_STEP = 1024 * 1024;
/** Spare buffers kept in this thread: two 128 × 3072 answers being written while two more are decoded. */
const SPARE_BUFFERS = 4;
/** A spare larger than this (a rare answer of many large images) is not kept: 4 of them would hold too much memory for good. */
export const SPARE_MAX_BYTES = 16 * 1024 * 1024;

const spare: ArrayBuffer[] = [];
/** Buffers made here for answers (own, whole, never a slab): only these are handed back (workers/decode-reply.ts, ownBuffers). */
const answerBuffers = new WeakSet<ArrayBuffer>();

/** Buffers the HTTP worker is done with (their answers written), for this thread's next answers. */
export function keepSpareAnswers(buffers: readonly ArrayBuffer[]): void {
  for (const b of buffers) {
    if (b.byteLength === 0) continue; // detached or empty: nothing to reuse
    answerBuffers.add(b);
    if (spare.length < SPARE_BUFFERS && b.byteLength <= SPARE_MAX_BYTES) spare.push(b);
  }
}

/** Whether `buffer` is an answer buffer made or kept here: one the answer's view may not fill, but that holds nothing else. */
export function isAnswerBuffer(buffer: ArrayBufferLike): boolean {
  return buffer instanceof ArrayBuffer && answerBuffers.has(buffer);
}

/** How many spare buffers this thread holds (tests). */
export function spareAnswerCount(): number {
  return spare.length;
}

/**
 * `text` as UTF-8 bytes. A large one is written into a spare buffer that
 * fits it (the smallest), or into a new one of its own rounded up to a
 * megabyte; the result is a view from offset 0 of that buffer.
 */
export function answerBytes(text: string): Uint8Array {
  if (text.length < SPARE_MIN_CHARS) return Buffer.from(text, 'utf8');
  const out = answerBuffer(Buffer.byteLength(text, 'utf8'));
  out.write(text, 0, 'utf8');
  return out;
}

/**
 * `length` bytes to write an answer into, not zero-filled (the caller writes
 * every one): as answerBytes places them, a view from offset 0 of a spare or
 * new answer buffer when large, a slice of Node's slab when small.
 */
export function answerBuffer(length: number): Buffer {
  if (length < SPARE_MIN_CHARS) return Buffer.allocUnsafe(length);
  let best = -1;
  for (let i = 0; i < spare.length; i++) if (spare[i]!.byteLength >= length && (best < 0 || spare[i]!.byteLength < spare[best]!.byteLength)) best = i;
  let buffer: ArrayBuffer;
  if (best >= 0) buffer = spare.splice(best, 1)[0]!;
  else {
    // allocUnsafeSlow: a buffer of its own, not zero-filled.
    buffer = Buffer.allocUnsafeSlow(Math.ceil(length / ANSWER_BUFFER_STEP) * ANSWER_BUFFER_STEP).buffer as ArrayBuffer;
    answerBuffers.add(buffer);
  }
  return Buffer.from(buffer, 0, length);
}
