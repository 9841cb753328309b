// Collecting a supplier's whole reply (suppliers/reply-limits.ts,
// ReplyCollector): a small one is its chunks joined; a large one is copied
// into blocks that each own their ArrayBuffer (so the pool can be handed them
// without a copy), in order, with nothing lost at block edges; over the bound
// it refuses the chunk that crosses it. (How a real reply is read into it, and
// dropped past the bound: test/suppliers/reply-body.test.ts.)
import t from 'tap';
import { recycleBlocks, REPLY_BLOCK_BYTES, ReplyCollector, ReplyTooLarge, replyText, type ReplyBytes } from '../../src/suppliers/reply-limits.js';

/** `bytes` pushed in chunks of the given sizes (cycled) until the collector refuses one; `pushed` counts the bytes it took. */
function collect(bytes: Buffer, sizes: number[], maxBytes: number): { reply: ReplyBytes | null; error: unknown; pushed: number } {
  const collector = new ReplyCollector(maxBytes);
  let pushed = 0;
  try {
    for (let i = 0, at = 0; at < bytes.length; i++) {
      const chunk = bytes.subarray(at, at + sizes[i % sizes.length]!);
      collector.push(chunk);
      pushed += chunk.length;
      at += chunk.length;
    }
  } catch (error) {
    return { reply: null, error, pushed };
  }
  return { reply: collector.finish(), error: null, pushed };
}

function whole(bytes: Buffer, sizes: number[], maxBytes: number): ReplyBytes {
  const { reply, error } = collect(bytes, sizes, maxBytes);
  if (reply === null) throw error;
  return reply;
}

function patterned(length: number): Buffer {
  const b = Buffer.allocUnsafe(length);
  for (let i = 0; i < length; i++) b[i] = (i * 7 + (i >> 11)) & 0xff;
  return b;
}

t.test('a small reply: one block, the chunks joined', async (t) => {
  const text = '{"choices":[{"message":{"content":"héllo"}}]}';
  const reply = whole(Buffer.from(text), [5, 9], 1 << 20);
  t.equal(reply.blocks.length, 1);
  t.equal(reply.length, Buffer.byteLength(text));
  t.equal(replyText(reply), text);
});

t.test('a large reply: blocks that own their buffers, in order, every byte kept across block edges', async (t) => {
  const bytes = patterned(9_000_003);
  const reply = whole(bytes, [65536, 1, 40000, 123457], 16 << 20);
  t.ok(reply.owned);
  t.ok(reply.blocks.length > 1, `${reply.blocks.length} blocks`);
  t.equal(reply.length, bytes.length);
  t.ok(Buffer.concat(reply.blocks).equals(bytes), 'the same bytes, in order');
  const buffers = new Set(reply.blocks.map((b) => b.buffer));
  t.equal(buffers.size, reply.blocks.length, 'one ArrayBuffer per block');
  for (const [i, b] of reply.blocks.entries()) {
    t.equal(b.byteOffset, 0, `block ${i} starts its buffer`);
    if (i < reply.blocks.length - 1) t.equal(b.byteLength, b.buffer.byteLength, `block ${i} fills its buffer`);
  }
  t.equal(replyText(reply).length, bytes.toString('utf8').length);
});

t.test('over the bound: ReplyTooLarge at the chunk that crosses it, nothing past it taken', async (t) => {
  const { reply, error, pushed } = collect(patterned(3_000_000), [65536], 1_000_000);
  t.equal(reply, null);
  t.same(error, new ReplyTooLarge(1_000_000));
  t.ok(pushed <= 1_000_000 && pushed > 1_000_000 - 65536, `took ${pushed} bytes: up to the chunk that crossed the bound`);
});

t.test('blocks the pool hands back are reused by the next large reply (a detached one, or one of another size, is not kept)', async (t) => {
  const first = whole(patterned(3_000_000), [65536], 16 << 20);
  const buffers = first.blocks.map((b) => b.buffer as ArrayBuffer);
  t.ok(buffers.every((b) => b.byteLength === REPLY_BLOCK_BYTES));
  const detached = new ArrayBuffer(REPLY_BLOCK_BYTES);
  structuredClone(detached, { transfer: [detached] });
  recycleBlocks([...buffers, detached, new ArrayBuffer(100)]);
  const bytes = patterned(2_500_000);
  const second = whole(bytes, [65536], 16 << 20);
  t.ok(Buffer.concat(second.blocks).equals(bytes), 'the new reply, whole');
  t.ok(second.blocks.every((b) => buffers.includes(b.buffer as ArrayBuffer)), 'in the blocks handed back');
});
