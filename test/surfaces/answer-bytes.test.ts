// A large answer's bytes are written into a buffer handed back by the HTTP
// worker once the previous answer was written (surfaces/answer-bytes.ts), and
// such a view is what the pool moves back (workers/decode-reply.ts, ownBuffers):
// the buffer holds that answer alone, from offset 0.
import t from 'tap';
import { ownBuffers } from '../../workers/decode-reply.js';
import { answerBytes, isAnswerBuffer, keepSpareAnswers, SPARE_MAX_BYTES, spareAnswerCount } from '../../src/surfaces/answer-bytes.js';

const text = (chars: number, fill = 'a'): string => '[' + fill.repeat(chars - 2) + ']';

t.test('a small answer is Buffer.from, as before: never an answer buffer, never moved', async (t) => {
  const small = answerBytes('[{"b64_json":"abc"}]');
  t.equal(Buffer.from(small).toString(), '[{"b64_json":"abc"}]');
  t.notOk(isAnswerBuffer(small.buffer));
  t.same(ownBuffers({ ok: true, decoded: { data: small } }), [], 'a slab slice is not moved');
});

t.test('a large answer gets a buffer of its own, rounded up to a megabyte, and is moved back whole', async (t) => {
  const big = text(1_500_000, 'é');
  const bytes = answerBytes(big);
  t.equal(bytes.byteOffset, 0);
  t.equal(bytes.byteLength, Buffer.byteLength(big));
  t.equal(bytes.buffer.byteLength, 3 << 20, '2,999,998 bytes of é and 2 brackets: 3 MiB');
  t.equal(Buffer.from(bytes).toString('utf8'), big, 'UTF-8 of every character');
  t.ok(isAnswerBuffer(bytes.buffer));
  t.same(ownBuffers({ ok: true, decoded: { data: bytes } }), [bytes.buffer], 'the whole buffer is the transfer list');
  t.same(ownBuffers({ ok: true, decoded: { data: bytes.subarray(1) } }), [], 'not a view from offset 0: not moved');
});

t.test('a spare buffer handed back carries the next answer that fits it; the smallest that fits is taken', async (t) => {
  const small = new ArrayBuffer(1 << 20);
  const large = new ArrayBuffer(4 << 20);
  keepSpareAnswers([large, small, new ArrayBuffer(0)]);
  t.equal(spareAnswerCount(), 2, 'an empty (detached) buffer is not kept');
  const a = answerBytes(text(900_000));
  t.equal(a.buffer, small, 'the 1 MiB spare: the smallest that fits 900 KB');
  const b = answerBytes(text(2_000_000, 'b'));
  t.equal(b.buffer, large, 'the 4 MiB spare');
  t.equal(Buffer.from(b).toString(), text(2_000_000, 'b'));
  t.equal(spareAnswerCount(), 0);
  const c = answerBytes(text(100_000));
  t.not(c.buffer, small, 'none left: a new one');
  t.equal(c.buffer.byteLength, 1 << 20);
  t.ok(isAnswerBuffer(small), 'a spare handed back is an answer buffer: moved back whole with the answer it carries');
});

t.test('at most four spares are kept in a thread, none over SPARE_MAX_BYTES', async (t) => {
  keepSpareAnswers([new ArrayBuffer(SPARE_MAX_BYTES + 1)]);
  t.equal(spareAnswerCount(), 0, 'a very large one is left to the collector');
  keepSpareAnswers(Array.from({ length: 6 }, () => new ArrayBuffer(1 << 20)));
  t.equal(spareAnswerCount(), 4);
});
