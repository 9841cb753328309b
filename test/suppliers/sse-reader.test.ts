// The supplier SSE reader: framing as the SSE spec has it, across any chunk
// boundary, and the bound on one event (issue 12 item 8).
import t from 'tap';
import { SseReader } from '../../src/suppliers/sse-reader.js';

const enc = new TextEncoder();
const TOO_LARGE = { name: 'ReplyTooLarge' };
const bytes = (s: string) => enc.encode(s);

t.test('events, named events, multi-line data, comments, CRLF', async (t) => {
  const r = new SseReader(1 << 20);
  t.same(r.push(bytes('data: a\n\nevent: x\ndata: b\ndata: c\n\n: comment\n\ndata: d\r\n\r\n')), [
    { event: null, data: 'a' },
    { event: 'x', data: 'b\nc' },
    { event: null, data: 'd' },
  ]);
  t.same(r.push(bytes('data: tail')), []);
  t.same(r.flush(), { event: null, data: 'tail' });
});

t.test('the same events whatever the chunk boundaries, blank lines split included', async (t) => {
  const text = 'data: {"a":1}\n\ndata: ünï\r\n\r\nevent: e\ndata: 2\n\n';
  const whole = new SseReader(1 << 20).push(bytes(text));
  const all = bytes(text);
  for (let size = 1; size <= 7; size++) {
    const r = new SseReader(1 << 20);
    const got = [];
    for (let i = 0; i < all.length; i += size) got.push(...r.push(all.subarray(i, i + size)));
    t.same(got, whole, `chunks of ${size} bytes`);
  }
});

t.test('a long event over many chunks, its blank line split between two of them', async (t) => {
  const long = 'y'.repeat(100_000);
  const all = bytes(`data: ${long}\r\n\r\ndata: next\n\n`);
  const cut = all.length - 'data: next\n\n'.length - 2; // between \r\n and \r\n
  const r = new SseReader(1 << 20);
  const got = [];
  for (let i = 0; i < cut; i += 1000) got.push(...r.push(all.subarray(i, Math.min(i + 1000, cut))));
  t.same(got, [], 'nothing until the blank line');
  got.push(...r.push(all.subarray(cut)));
  t.same(got, [{ event: null, data: long }, { event: null, data: 'next' }]);
});

t.test('issue 12 item 8: an event with no end is refused at max_event_bytes, and the buffer let go', async (t) => {
  const r = new SseReader(64 << 10);
  const block = new Uint8Array(16 << 10).fill(0x78);
  let pushed = 0;
  t.throws(() => {
    for (;;) {
      r.push(block);
      pushed += block.length;
    }
  }, TOO_LARGE);
  t.ok(pushed <= 64 << 10 && pushed >= (64 << 10) - block.length, `refused once over the bound (${pushed} bytes accepted)`);
  t.equal(r.flush(), null, 'nothing kept');
});

t.test('issue 12 item 8: the bound counts UTF-8 bytes, not characters', async (t) => {
  const limit = 3000;
  // 1100 characters of 3 bytes each = 3300 bytes: over, though fewer characters than the bound.
  t.throws(() => new SseReader(limit).push(bytes('data: ' + '€'.repeat(1100))), TOO_LARGE);
  t.same(new SseReader(limit).push(bytes('data: ' + '€'.repeat(900) + '\n\n')), [{ event: null, data: '€'.repeat(900) }], 'under it');
  // A whole event over the bound arriving in one chunk is refused too.
  t.throws(() => new SseReader(limit).push(bytes('data: ' + 'x'.repeat(4000) + '\n\n')), TOO_LARGE);
});
