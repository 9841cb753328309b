// SIGTERM with requests in flight: the workers stop accepting, the streams
// under way finish whole, and the process exits 0 within the drain timeout.
import t from 'tap';
import { startGateway } from '../helpers/gateway.js';
import { ADMIN_TOKEN, provision } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';

const db = await testDatabase(t);
if (db !== null) {
  t.test('in-flight streams finish, then exit 0', async (t) => {
    const gw = await startGateway({ env: { DATABASE_URL: db, ADMIN_TOKEN, DRAIN_TIMEOUT_MS: '8000' }, workers: 2 });
    const { key } = await provision(gw.url);
    await new Promise((r) => setTimeout(r, 300)); // the key reaches the second worker
    const streams = Array.from({ length: 4 }, async () => {
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'nw-swift-1', stream: true, messages: [{ role: 'user', content: '[sim:words=15] [sim:delay_ms=100]' }] }),
      });
      let text = '';
      for await (const chunk of res.body as any) text += Buffer.from(chunk).toString();
      return { status: res.status, text };
    });
    await new Promise((r) => setTimeout(r, 400)); // all four are mid-stream (1.5 s each)
    const signalledAt = Date.now();
    const exit = gw.stop('SIGTERM');
    await new Promise((r) => setTimeout(r, 200));
    const refused = await fetch(`${gw.url}/healthz`).then(
      () => false,
      () => true,
    );
    t.ok(refused, 'no new connection is accepted while draining');
    const results = await Promise.all(streams);
    for (const r of results) {
      t.equal(r.status, 200);
      t.ok(r.text.endsWith('data: [DONE]\n\n'), 'the stream finished whole');
      t.equal((r.text.match(/"content":"[^"]/g) ?? []).length, 15, 'every word arrived');
    }
    t.equal(await exit, 0, 'exit code 0');
    t.ok(Date.now() - signalledAt < 8000 + 3000, 'within the drain timeout');
  });
}
