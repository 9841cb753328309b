// Reading a supplier's whole reply (suppliers/reply-limits.ts): a small one
// is its chunks joined; a large one is copied into blocks that each own their
// ArrayBuffer (so the pool can be handed them without a copy), in order, with
// nothing lost at block edges; over the bound the read stops at once.
import t from 'tap';
import { readReplyBytes, recycleBlocks, REPLY_BLOCK_BYTES, ReplyTooLarge, replyText } from '../../src/suppliers/reply-limits.js';

type Body = Parameters<typeof readReplyBytes>[0];

/** A body yielding `bytes` in chunks of the given sizes (cycled), counting what was read and whether reading was stopped. */
function bodyOf(bytes: Buffer, sizes: number[]): { body: Body; stats: { yielded: number; stopped: boolean } } {
  const stats = { yielded: 0, stopped: false };
  async function* chunks() {
    try {
      let at = 0;
      for (let i = 0; at < bytes.length; i++) {
        const n = sizes[i % sizes.length]!;
        stats.yielded += Math.min(n, bytes.length - at);
        yield bytes.subarray(at, at + n);
        at += n;
      }
    } finally {
      stats.stopped = stats.yielded < bytes.length;
    }
  }
  return { body: chunks() as unknown as Body, stats };
}

function patterned(length: number): Buffer {
  const b = Buffer.allocUnsafe(length);
  for (let i = 0; i < length; i++) b[i] = (i * 7 + (i >> 11)) & 0xff;
  return b;
}

t.test('a small reply: one block, the chunks joined', async (t) => {
  const text = '{"choices":[{"message":{"content":"héllo"}}]}';
  const { body } = bodyOf(Buffer.from(text), [5, 9]);
  const reply = await readReplyBytes(body, 1 << 20);
  t.equal(reply.blocks.length, 1);
  t.equal(reply.length, Buffer.byteLength(text));
  t.equal(replyText(reply), text);
});

t.test('a large reply: blocks that own their buffers, in order, every byte kept across block edges', async (t) => {
  const bytes = patterned(9_000_003);
  const { body } = bodyOf(bytes, [65536, 1, 40000, 123457]);
  const reply = await readReplyBytes(body, 16 << 20);
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

t.test('over the bound: ReplyTooLarge, and the body is read no further', async (t) => {
  const bytes = patterned(3_000_000);
  const { body, stats } = bodyOf(bytes, [65536]);
  await t.rejects(readReplyBytes(body, 1_000_000), new ReplyTooLarge(1_000_000));
  t.ok(stats.stopped, 'reading stopped');
  t.ok(stats.yielded <= 1_000_000 + 65536, `read ${stats.yielded} bytes: the bound plus one chunk at most`);
});

t.test('blocks the pool hands back are reused by the next large reply (a detached one, or one of another size, is not kept)', async (t) => {
  const first = await readReplyBytes(bodyOf(patterned(3_000_000), [65536]).body, 16 << 20);
  const buffers = first.blocks.map((b) => b.buffer as ArrayBuffer);
  t.ok(buffers.every((b) => b.byteLength === REPLY_BLOCK_BYTES));
  const detached = new ArrayBuffer(REPLY_BLOCK_BYTES);
  structuredClone(detached, { transfer: [detached] });
  recycleBlocks([...buffers, detached, new ArrayBuffer(100)]);
  const bytes = patterned(2_500_000);
  const second = await readReplyBytes(bodyOf(bytes, [65536]).body, 16 << 20);
  t.ok(Buffer.concat(second.blocks).equals(bytes), 'the new reply, whole');
  t.ok(second.blocks.every((b) => buffers.includes(b.buffer as ArrayBuffer)), 'in the blocks handed back');
});
