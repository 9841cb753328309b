// Where a supplier's unary reply is parsed and decoded: on the event loop,
// or in the worker-thread pool (workers/decode-reply.ts) when it is longer
// than this many bytes. Measured by bench/micro/embeddings-reply.ts and
// bench/micro/image-reply.ts (README, Performance): a hop costs the event
// loop ~20–40 µs whatever the size, while parsing inline costs ~2 µs per KB
// of base64 or text and ~5–8 µs per KB of floats, so the pool pays from
// ~16 KB on. One threshold for every surface: the per-KB costs differ by
// less than the hop's own spread.
export const REPLY_POOL_BYTES = 16384;
