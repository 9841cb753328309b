// A large answer in parts (server/respond.ts, sendJsonParts) is written in
// slices of at most WRITE_SLICE_BYTES, each in an event-loop task of its own,
// and only as fast as the socket takes them (issue 33 item 2): against a
// recording stand-in for uWS's response, so the test asserts how the bytes
// are cut and scheduled, not how long anything takes.
import t from 'tap';
import type { RequestContext } from '../../src/server/context.js';
import { sendJsonParts, WRITE_SLICE_BYTES } from '../../src/server/respond.js';

/** uWS's response as sendJsonParts uses it; `accept(n)` says how many of n bytes offered the socket takes. */
function fakeResponse(accept: (n: number) => number) {
  const writes: Buffer[] = [];
  let offset = 0;
  let writable: ((offset: number) => boolean) | null = null;
  const res = {
    cork: (f: () => void) => f(),
    writeStatus: () => res,
    writeHeader: () => res,
    getWriteOffset: () => offset,
    onWritable: (f: (offset: number) => boolean) => {
      writable = f;
    },
    tryEnd: (chunk: Uint8Array, total: number): [boolean, boolean] => {
      const taken = accept(chunk.byteLength);
      writes.push(Buffer.from(chunk.subarray(0, taken)));
      offset += taken;
      return [taken === chunk.byteLength, offset === total];
    },
  };
  return { res, writes, drain: () => writable!(offset) };
}

function contextOf(res: unknown): RequestContext {
  return { aborted: false, responded: false, status: 0, res, requestId: 'r', route: { envelope: 'rest' }, finish() {} } as unknown as RequestContext;
}

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));
const body = (n: number): Uint8Array => Uint8Array.from({ length: n }, (_, i) => i % 251);

t.test('a 2.8 MB answer: one slice per task, none over WRITE_SLICE_BYTES, the bytes whole and in order', async (t) => {
  const big = body(2_800_000);
  const { res, writes } = fakeResponse((n) => n);
  const ctx = contextOf(res);
  sendJsonParts(ctx, 200, ['{"data":', big, '}']);
  // Only the first slice is written before sendJsonParts returns: the rest waits for later tasks.
  t.equal(writes.length, 1, 'one slice in the calling task');
  for (let i = 0; i < 200 && Buffer.concat(writes).byteLength < big.byteLength + 9; i++) await turn();
  t.ok(writes.every((w) => w.byteLength <= WRITE_SLICE_BYTES), 'no slice over WRITE_SLICE_BYTES');
  t.ok(writes.length >= Math.ceil(big.byteLength / WRITE_SLICE_BYTES), `${writes.length} slices`);
  t.same(Buffer.concat(writes), Buffer.concat([Buffer.from('{"data":'), big, Buffer.from('}')]), 'the body whole, in order');
});

t.test('backpressure: nothing is written until the socket drains, then it goes on from the offset reached', async (t) => {
  const big = body(600_000);
  let room = 50_000;
  const { res, writes, drain } = fakeResponse((n) => {
    const taken = Math.min(n, room);
    room -= taken;
    return taken;
  });
  sendJsonParts(contextOf(res), 200, [big]);
  for (let i = 0; i < 5; i++) await turn();
  t.equal(Buffer.concat(writes).byteLength, 50_000, 'only what the socket took');
  room = Infinity;
  t.equal(drain(), true, 'the drained socket takes the next slice');
  for (let i = 0; i < 50; i++) await turn();
  t.same(Buffer.concat(writes), Buffer.from(big), 'the rest, from the offset reached');
});

t.test('a client that leaves mid-answer: no slice is written after', async (t) => {
  const big = body(1_000_000);
  const { res, writes } = fakeResponse((n) => n);
  const ctx = contextOf(res);
  sendJsonParts(ctx, 200, [big]);
  ctx.aborted = true;
  for (let i = 0; i < 20; i++) await turn();
  t.equal(writes.length, 1, 'the first slice only');
});

t.test('onWritten runs once, only after the last byte is handed over (the parts may then be reused); never for a client that left', async (t) => {
  const big = body(700_000);
  let room = 300_000;
  const { res, writes, drain } = fakeResponse((n) => {
    const taken = Math.min(n, room);
    room -= taken;
    return taken;
  });
  let calls = 0;
  let writtenWhenCalled = -1;
  sendJsonParts(contextOf(res), 200, [big, '}'], WRITE_SLICE_BYTES, () => {
    calls++;
    writtenWhenCalled = Buffer.concat(writes).byteLength;
  });
  for (let i = 0; i < 20; i++) await turn();
  t.equal(calls, 0, 'not while the socket pushes back with bytes left');
  room = Infinity;
  drain();
  for (let i = 0; i < 50; i++) await turn();
  t.equal(calls, 1, 'once');
  t.equal(writtenWhenCalled, 700_001, 'after the last byte');

  const left = fakeResponse((n) => n);
  const ctx = contextOf(left.res);
  let leftCalls = 0;
  sendJsonParts(ctx, 200, [body(1_000_000)], WRITE_SLICE_BYTES, () => leftCalls++);
  ctx.aborted = true;
  for (let i = 0; i < 20; i++) await turn();
  t.equal(leftCalls, 0, 'a client that left: not called (its buffer is left to the collector)');
});
