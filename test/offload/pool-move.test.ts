// A body handed to the worker-thread pool arrives as exactly its own bytes,
// whatever Buffer it came in: small request bodies are slices of Node's
// shared slab (server/body.ts uses Buffer.allocUnsafe), and moving the slab
// would hand the thread other bytes at offset 0 — another request's, or
// garbage. Reached whenever pools.offload_body_bytes is below 4 KB (it may be 0).
import t from 'tap';
import { OffloadPool } from '../../src/offload/pool.js';

const pool = new OffloadPool(1, 1, 64);
t.teardown(() => pool.close());

/** A body in a slice of the shared slab, after other bytes, as a small request body is. */
function slabSlice(text: string): Buffer {
  const before = Buffer.allocUnsafe(64);
  before.write('{"model":"someone else\'s request","messages":[]}'.padEnd(64, ' '));
  const body = Buffer.allocUnsafe(Buffer.byteLength(text));
  body.write(text);
  return body;
}

t.test('a slab slice reaches prepare() as its own bytes', async (t) => {
  const body = slabSlice(JSON.stringify({ model: 'nw-swift-1', messages: [{ role: 'user', content: 'hi' }] }));
  t.not(body.byteOffset, 0, 'the test body is a slice of the shared slab');
  const result = await pool.prepare('chat', body);
  t.ok(result.ok, JSON.stringify(result));
  if (result.ok) t.equal(result.prepared.decoded.model, 'nw-swift-1');
});

t.test('a slab slice reaches decodeLocal() as its own bytes', async (t) => {
  const body = slabSlice(JSON.stringify({ model: 'ks-quill-1', messages: [{ role: 'user', content: 'hi' }] }));
  t.not(body.byteOffset, 0);
  const result = await pool.decodeLocal('count_tokens', body);
  t.ok(result.ok, JSON.stringify(result));
  if (result.ok) t.equal((result.decoded as { model: string }).model, 'ks-quill-1');
});
