// Reads a request body from uWebSockets.js with a size limit.
//
// uWS hands each chunk as an ArrayBuffer that is neutered when the onData
// callback returns, so every chunk is copied. A body over the limit is refused
// as soon as the limit is crossed (or at once from Content-Length), never
// buffered whole.
import type { HttpResponse } from './uws.js';

export const BODY_TOO_LARGE = 'body_too_large' as const;

export type BodyCallback = (tooLarge: typeof BODY_TOO_LARGE | null, body: Buffer) => void;

const EMPTY = Buffer.alloc(0);

/**
 * Collects the body of `res` into one Buffer and calls `done` once.
 * `declaredLength` is the Content-Length header value ('' when absent).
 * The caller owns `onAborted`; after an abort `done` is never called.
 */
export function readBody(
  res: HttpResponse,
  declaredLength: string,
  maxBytes: number,
  done: BodyCallback,
): void {
  if (declaredLength !== '' && Number(declaredLength) > maxBytes) {
    done(BODY_TOO_LARGE, EMPTY);
    return;
  }
  let chunks: Buffer[] | null = null;
  let single: Buffer | null = null;
  let size = 0;
  let finished = false;
  res.onData((chunk, isLast) => {
    if (finished) return;
    size += chunk.byteLength;
    if (size > maxBytes) {
      finished = true;
      done(BODY_TOO_LARGE, EMPTY);
      return;
    }
    const copy = Buffer.allocUnsafe(chunk.byteLength);
    copy.set(new Uint8Array(chunk));
    if (single === null && chunks === null) single = copy;
    else {
      if (chunks === null) {
        chunks = [single as Buffer];
        single = null;
      }
      chunks.push(copy);
    }
    if (isLast) {
      finished = true;
      done(null, chunks !== null ? Buffer.concat(chunks, size) : (single ?? EMPTY));
    }
  });
}
