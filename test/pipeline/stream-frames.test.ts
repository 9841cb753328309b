// A stream's first frame leaves as soon as it is made (answer-stream.ts,
// framesOf): when one read from the supplier holds a burst of events, the
// client gets the first frame before the rest of the burst is transcoded;
// after the first frame, a read's frames are written together, once.
import t from 'tap';
import { framesOf } from '../../src/pipeline/answer-stream.js';
import type { SseEvent } from '../../src/suppliers/sse-reader.js';

/** A writer that records what was written, and when the stream opened (the first write). */
function writer(opened = false): { firstByteAt: number | null; writes: string[]; write(frames: string): boolean } {
  return {
    firstByteAt: opened ? 1 : null,
    writes: [],
    write(frames: string): boolean {
      this.writes.push(frames);
      this.firstByteAt ??= 1;
      return true;
    },
  };
}

/** A transcoder that makes `[data]` of each event, and nothing of a `ping`. */
const transcoder = { event: (ev: SseEvent): string => (ev.event === 'ping' ? '' : `[${ev.data}]`) };
const events = (...data: string[]): SseEvent[] => data.map((d) => ({ event: d === 'ping' ? 'ping' : null, data: d }));

t.test('the first read of a stream: its first frame written at once, the rest returned together', async (t) => {
  const w = writer();
  const rest = framesOf(events('a', 'b', 'c'), transcoder, w);
  t.same(w.writes, ['[a]'], 'only the first frame was written');
  t.equal(rest, '[b][c]', 'the rest, for one write');
});

t.test('events that make no frame do not open the stream', async (t) => {
  const w = writer();
  const rest = framesOf(events('ping', 'ping', 'a', 'b'), transcoder, w);
  t.same(w.writes, ['[a]']);
  t.equal(rest, '[b]');
  const none = writer();
  t.equal(framesOf(events('ping'), transcoder, none), '');
  t.same(none.writes, [], 'nothing written');
  t.equal(none.firstByteAt, null);
});

t.test('an open stream: nothing written here, every frame returned', async (t) => {
  const w = writer(true);
  t.equal(framesOf(events('a', 'b'), transcoder, w), '[a][b]');
  t.same(w.writes, []);
});
