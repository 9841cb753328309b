// Bounds on what a supplier may send back. A unary reply is read whole and a
// stream's event is buffered until its blank line, so without a bound one
// misbehaving supplier could fill a worker's memory. Over a bound the read
// stops at once (the connection is dropped, what was buffered is released)
// and the caller fails the call.
import type { Dispatcher } from 'undici';

/** A supplier reply, or one event of its stream, is larger than its bound. */
export class ReplyTooLarge extends Error {
  override readonly name = 'ReplyTooLarge';

  constructor(readonly limit: number) {
    super(`supplier reply over ${limit} bytes`);
  }
}

/**
 * The whole body's bytes, refusing one over `maxBytes`: at most `maxBytes`
 * plus one chunk is ever held. The bytes are left undecoded, so a large reply
 * can be handed to a worker thread (transferred) without being turned into a
 * string (and cloned) on the event loop first.
 */
export async function readReplyBytes(body: Dispatcher.ResponseData['body'], maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of body) {
    const buf = chunk as Buffer;
    total += buf.length;
    // Throwing inside for-await destroys the body: undici drops the connection.
    if (total > maxBytes) throw new ReplyTooLarge(maxBytes);
    chunks.push(buf);
  }
  return Buffer.concat(chunks, total);
}
