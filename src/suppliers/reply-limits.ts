// Bounds on what a supplier may send back. A unary reply is read whole and a
// stream's event is buffered until its blank line, so without a bound one
// misbehaving supplier could fill a worker's memory. Over a bound the read
// stops at once (the connection is dropped, what was buffered is released)
// and the caller fails the call.
/** A supplier reply, or one event of its stream, is larger than its bound. */
export class ReplyTooLarge extends Error {
  override readonly name = 'ReplyTooLarge';

  constructor(readonly limit: number) {
    super(`supplier reply over ${limit} bytes`);
  }
}

/**
 * A whole reply's bytes, undecoded, in order. Small replies are one block (the
 * chunks joined, as they always were). A large one is copied, chunk by chunk as
 * it arrives, into blocks allocated for it: no step ever joins megabytes in
 * one go on the event loop (an 8.4 MB Buffer.concat cost ~16% of the loop's
 * time per float embeddings request), and each block owns its ArrayBuffer, so
 * the blocks can be moved to a pool thread without a copy.
 */
export interface ReplyBytes {
  blocks: Uint8Array[];
  length: number;
  /** Each block is the only view of an ArrayBuffer allocated for it (moving its buffer hands over nothing else). */
  owned: boolean;
}

/** Up to this many bytes a reply is kept as undici's chunks and joined at the end (chat replies: a few KB). */
const JOIN_BYTES = 64 * 1024;
/** Past JOIN_BYTES a reply is copied into blocks of this size (one size, so any spare block fits any reply). */
export const REPLY_BLOCK_BYTES = 1024 * 1024;
/**
 * Blocks the pool handed back after decoding (recycleBlocks), kept for the
 * next large reply: copying into fresh memory costs its page faults on the
 * event loop (measured: 1–20 ms for 8.5 MB into fresh blocks, 0.3 ms into
 * reused ones). At most SPARE_BLOCKS are kept (16 MiB: two 128 × 3072 float
 * replies in flight); the rest go to the garbage collector.
 */
const SPARE_BLOCKS = 16;
const spare: ArrayBuffer[] = [];

/** Blocks a pool thread is done with (workers/decode-reply.ts moves them back), for the next large reply. */
export function recycleBlocks(buffers: readonly ArrayBuffer[]): void {
  for (const b of buffers) if (spare.length < SPARE_BLOCKS && b.byteLength === REPLY_BLOCK_BYTES) spare.push(b);
}

function newBlock(): Uint8Array {
  // allocUnsafeSlow: a buffer of its own (never a slice of Node's shared slab), not zero-filled.
  return new Uint8Array(spare.pop() ?? Buffer.allocUnsafeSlow(REPLY_BLOCK_BYTES).buffer);
}

/**
 * Collects a whole body's bytes as they arrive, refusing one over `maxBytes`:
 * at most `maxBytes` plus one chunk (plus a block's unused end) is ever held.
 * `push` throws ReplyTooLarge past the bound; the caller stops reading then
 * (ReplyBody drops the connection).
 */
export class ReplyCollector {
  private readonly chunks: Buffer[] = [];
  private readonly blocks: Uint8Array[] = [];
  private block: Uint8Array | null = null;
  private used = 0;
  private total = 0;

  constructor(private readonly maxBytes: number) {}

  push(buf: Buffer): void {
    this.total += buf.length;
    if (this.total > this.maxBytes) throw new ReplyTooLarge(this.maxBytes);
    if (this.block === null && this.total <= JOIN_BYTES) {
      this.chunks.push(buf);
      return;
    }
    // Past JOIN_BYTES: what was kept so far, then every chunk, is copied into blocks.
    if (this.block === null) {
      for (const kept of this.chunks) this.copy(kept);
      this.chunks.length = 0;
    }
    this.copy(buf);
  }

  finish(): ReplyBytes {
    if (this.block === null) return { blocks: [this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.total)], length: this.total, owned: false };
    // The last block's unused end travels with it (a view cannot shrink its buffer without a copy).
    this.blocks.push(this.block.subarray(0, this.used));
    this.block = null;
    return { blocks: this.blocks, length: this.total, owned: true };
  }

  private copy(piece: Buffer): void {
    let from = 0;
    while (from < piece.length) {
      if (this.block === null || this.used === this.block.length) {
        if (this.block !== null) this.blocks.push(this.block);
        this.block = newBlock();
        this.used = 0;
      }
      const n = Math.min(piece.length - from, this.block.length - this.used);
      this.block.set(from === 0 && n === piece.length ? piece : piece.subarray(from, from + n), this.used);
      this.used += n;
      from += n;
    }
  }
}

/** The reply as text (the inline path: small replies). */
export function replyText(reply: ReplyBytes): string {
  return blocksText(reply.blocks, reply.length);
}

/**
 * Blocks in order as one UTF-8 text: joined first, then decoded once (a
 * character split between two blocks decodes whole). Joining and decoding
 * once beat a text built block by block (a cons string) by ~30 ms per
 * 128 × 3072 float reply in the JSON.parse that follows, and a streaming
 * TextDecoder by more (bench/micro/embeddings-reply.ts).
 */
export function blocksText(blocks: readonly Uint8Array[], length?: number): string {
  const first = blocks[0];
  if (blocks.length === 1 && first !== undefined) return Buffer.from(first.buffer, first.byteOffset, first.byteLength).toString('utf8');
  return Buffer.concat(blocks, length).toString('utf8');
}
