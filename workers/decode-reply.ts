// piscina task: parse and decode a large supplier reply off the event loop,
// for any surface (embeddings answered as float arrays: ~8 MB of JSON for
// 128 × 3072 dimensions; images: megabytes of base64). The HTTP worker hands
// over the reply's bytes (its blocks moved, not copied: no string is built on
// the event loop) and gets back the surface decoder's plain data, or that the
// reply was broken. The decoded data's large byte members (embeddings: the
// `data` array already written as JSON bytes) are moved back the same way, so
// the event loop neither clones nor encodes them: it writes them as they are.
// Measured by bench/micro/embeddings-reply.ts and bench/micro/image-reply.ts.
import { Piscina } from 'piscina';
import { GatewayError } from '../src/errors/gateway-error.js';
import { blocksText } from '../src/suppliers/reply-limits.js';
import { isAnswerBuffer, SPARE_MAX_BYTES } from '../src/surfaces/answer-bytes.js';
import { modelCallNamed } from '../src/surfaces/index.js';
import type { DecodeReplyResult, RequestFacts } from '../src/surfaces/surface.js';
import './thread-priority.js';

export interface DecodeReplyTask {
  /** The surface's registry name (src/surfaces/index.ts). */
  surface: string;
  /** The reply's bytes: one array, or its blocks in order (suppliers/reply-limits.ts, ReplyBytes). */
  body: Uint8Array | Uint8Array[];
  /** The request's facts (Prepared.meta), which decoding may need (images: n). */
  meta: RequestFacts;
}

/** The task's work, as plain data (what the inline path and the tests compare). */
export function decodeReplyData(task: DecodeReplyTask): DecodeReplyResult {
  const surface = modelCallNamed(task.surface);
  const blocks = task.body instanceof Uint8Array ? [task.body] : task.body;
  if (surface.decodeReplyBytes !== undefined) {
    // The surface's byte decoder first (no JSON.parse garbage); a reply it does not take is decoded below.
    const decoded = surface.decodeReplyBytes(contiguous(blocks), task.meta);
    if (decoded !== null) return { ok: true, decoded };
  }
  try {
    return { ok: true, decoded: surface.decodeReply(JSON.parse(blocksText(blocks)), task.meta) };
  } catch (err) {
    // Not JSON, or not the protocol's reply: the same upstream_error the inline path gives.
    if (err instanceof SyntaxError || (err instanceof GatewayError && err.code === 'upstream_error')) return { ok: false };
    throw err;
  }
}

/** This thread's copy of a reply read in blocks, kept for the next one (at most SPARE_MAX_BYTES; a larger reply gets its own). */
let joined = new Uint8Array(0);

/** The reply as one view: its only block, or the blocks copied in order into `joined`. */
function contiguous(blocks: readonly Uint8Array[]): Uint8Array {
  if (blocks.length === 1) return blocks[0]!;
  let length = 0;
  for (const b of blocks) length += b.byteLength;
  if (length > SPARE_MAX_BYTES) return Buffer.concat(blocks, length);
  if (joined.byteLength < length) joined = new Uint8Array(Math.ceil(length / JOINED_STEP) * JOINED_STEP);
  let at = 0;
  for (const b of blocks) {
    joined.set(b, at);
    at += b.byteLength;
  }
  return joined.subarray(0, length);
}
const JOINED_STEP = 1024 * 1024;

/**
 * The buffers to move back: the decoded data's byte members that are the only
 * view of their ArrayBuffer (Buffer.from of a string of 4 KB or more allocates
 * its own), or a view from offset 0 of an answer buffer (surfaces/answer-bytes.ts:
 * it holds that answer alone, its end unused). A smaller one is a slice of
 * Node's shared slab and is cloned: moving the slab would hand over (and
 * detach here) whatever else it holds.
 */
export function ownBuffers(result: DecodeReplyResult): ArrayBuffer[] {
  if (!result.ok || result.decoded === null || typeof result.decoded !== 'object') return [];
  const buffers: ArrayBuffer[] = [];
  for (const value of Object.values(result.decoded as object)) {
    if (!(value instanceof Uint8Array) || value.byteOffset !== 0 || !(value.buffer instanceof ArrayBuffer)) continue;
    if (value.byteLength === value.buffer.byteLength || isAnswerBuffer(value.buffer)) buffers.push(value.buffer);
  }
  return buffers;
}

/** The result, with its own buffers marked for piscina to transfer (Piscina.transferableSymbol / valueSymbol). */
export default function decodeReply(task: DecodeReplyTask): DecodeReplyResult | Moved {
  const result: DecodeReplyResult = decodeReplyData(task);
  const buffers = ownBuffers(result);
  // The reply's blocks (read into a string, no longer needed here) go back to the HTTP worker for its next large reply.
  if (Array.isArray(task.body)) {
    result.spent = task.body.map((b) => b.buffer as ArrayBuffer);
    buffers.push(...result.spent);
  }
  if (buffers.length === 0) return result;
  // piscina's Transferable: what to transfer, and the value the caller receives (its type is not exported).
  const moved = { [Piscina.transferableSymbol]: buffers, [Piscina.valueSymbol]: result };
  return Piscina.move(moved as unknown as Parameters<typeof Piscina.move>[0]);
}

/** A result piscina unwraps in the HTTP worker, its buffers transferred. */
export type Moved = ReturnType<typeof Piscina.move>;
