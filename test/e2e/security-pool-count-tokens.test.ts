// Issue 30 item 4: count_tokens takes the key's concurrency slot, has a
// per-organization quota of its own (not the model-call quota), and one key's
// large counts cannot occupy the worker's pool: another organization's call
// that needs the pool is served within a bound while they run.
import t from 'tap';
import { startSimulator } from '../../src/simulator/index.js';
import { startGateway } from '../helpers/gateway.js';
import { ADMIN_TOKEN, provision } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';

const SLOTS = 12;
const COUNT_QUOTA = 20;
const MODEL_QUOTA = 13;

const db = await testDatabase(t);
if (db !== null) {
  const sim = await startSimulator({ instances: ['alpha', 'beta', 'gamma'] });
  const gw = await startGateway({
    env: {
      DATABASE_URL: db,
      SIMULATOR_URL: sim.url,
      ADMIN_TOKEN,
      MAX_CONCURRENT_PER_KEY: String(SLOTS),
      COUNT_TOKENS_PER_SECOND: '1000',
      COUNT_TOKENS_PER_MINUTE: String(COUNT_QUOTA),
      QUOTA_PER_SECOND: '1000',
      QUOTA_PER_MINUTE: String(MODEL_QUOTA),
    },
  });
  t.teardown(async () => {
    await gw.stop();
    await sim.close();
  });

  const countTokens = (key: string, text: string) =>
    fetch(`${gw.url}/v1/messages/count_tokens`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'quill', messages: [{ role: 'user', content: text }] }),
    });
  const chat = (key: string, text: string) =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'nw-swift-1', max_tokens: 16, messages: [{ role: 'user', content: text }] }),
    });
  const timed = async (call: () => Promise<Response>): Promise<{ status: number; ms: number }> => {
    const started = performance.now();
    const res = await call();
    await res.arrayBuffer();
    return { status: res.status, ms: performance.now() - started };
  };

  t.test("issue 30 item 4: count_tokens takes one of the key's concurrency slots", async (t) => {
    const { key } = await provision(gw.url);
    const { key: other } = await provision(gw.url);
    // Slow model calls hold every slot the key has on this (one) worker.
    const held = Array.from({ length: SLOTS }, () => chat(key, 'hold [sim:delay_ms=1500] [sim:words=2]'));
    await new Promise((r) => setTimeout(r, 400));
    const refused = await countTokens(key, 'one more');
    const body: any = await refused.json();
    t.equal(refused.status, 429, 'a count beyond the slots is refused');
    t.equal(body.type, 'error', 'in the messages envelope');
    t.equal(body.error.type, 'rate_limit_error');
    t.equal(body.error.code, 'concurrency_limited');
    t.equal(refused.headers.get('retry-after'), '1');
    t.equal((await countTokens(other, 'another key')).status, 200, 'another key is not limited');
    for (const r of await Promise.all(held)) t.equal(r.status, 200);
    t.equal((await countTokens(key, 'slots given back')).status, 200, 'the slots were given back');
  });

  t.test('issue 30 item 4: count_tokens has a per-organization quota of its own, apart from the model-call quota', async (t) => {
    const { key, orgId } = await provision(gw.url);
    for (let i = 0; i < COUNT_QUOTA; i++) t.equal((await countTokens(key, `count ${i}`)).status, 200);
    const refused = await countTokens(key, 'over the quota');
    const body: any = await refused.json();
    t.equal(refused.status, 429, `the count after ${COUNT_QUOTA} in a minute is refused`);
    t.equal(body.error.code, 'rate_limited');
    t.equal(body.error.type, 'rate_limit_error');
    t.ok(Number(refused.headers.get('retry-after')) >= 1, `Retry-After ${refused.headers.get('retry-after')}`);
    // Another key of the same organization shares its quota.
    const second = await fetch(`${gw.url}/console/v1/organizations/${orgId}/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'second' }),
    }).then((r) => r.json() as Promise<any>);
    t.equal((await countTokens(second.secret, 'same organization')).status, 429, "the organization's quota, not the key's");
    // The counts consumed none of the model-call quota, and that quota's end does not stop counts of another organization.
    for (let i = 0; i < MODEL_QUOTA; i++) t.equal((await chat(key, `[sim:words=1] ${i}`)).status, 200, `model call ${i + 1} of ${MODEL_QUOTA}`);
    t.equal((await chat(key, '[sim:words=1]')).status, 429, 'the model-call quota is its own');
    const { key: fresh } = await provision(gw.url);
    for (let i = 0; i < MODEL_QUOTA; i++) await chat(fresh, `[sim:words=1] ${i}`);
    t.equal((await chat(fresh, '[sim:words=1]')).status, 429, 'model-call quota used up');
    t.equal((await countTokens(fresh, 'still counted')).status, 200, 'counts go on past the model-call quota');
  });

  t.test('issue 30 item 4: one key flooding count_tokens with 2 MB bodies does not hold up another organization', async (t) => {
    const { key: flooder } = await provision(gw.url);
    const { key: victim } = await provision(gw.url);
    // 24 KB: over pools.offload_body_bytes, so it is prepared in the pool the counts fill.
    const chatText = `[sim:words=3] ${'lorem ipsum dolor sit amet '.repeat(900)}`;
    const alone = await timed(() => chat(victim, chatText));
    t.equal(alone.status, 200);
    const big = 'tokens of a large count '.repeat(88_000); // ~2 MB
    const flood = Array.from({ length: 10 }, () => timed(() => countTokens(flooder, big)));
    await new Promise((r) => setTimeout(r, 500));
    const beside = await timed(() => chat(victim, chatText));
    const counts = await Promise.all(flood);
    t.equal(beside.status, 200);
    t.ok(
      counts.every((c) => c.status === 200),
      `the counts answered: ${counts.map((c) => c.status).join(' ')}`,
    );
    const slowestCount = Math.max(...counts.map((c) => c.ms));
    t.comment(`chat alone ${alone.ms.toFixed(0)} ms; beside the flood ${beside.ms.toFixed(0)} ms; the flood's slowest count ${slowestCount.toFixed(0)} ms`);
    // The chat waits at most for the count in progress (its organization's turn comes next), not for the queue of ten.
    t.ok(beside.ms < slowestCount / 3, `beside the flood ${beside.ms.toFixed(0)} ms, under a third of the flood's ${slowestCount.toFixed(0)} ms`);
  });
}
