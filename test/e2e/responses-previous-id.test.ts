// previous_response_id over real HTTP on a real gateway (two workers,
// PostgreSQL store, embedded ledger, the simulator): the id of every
// response the organization was handed is its own, whatever the ending
// (issue 38 item 1); another organization's id and an unknown one are
// refused alike, in the same time, and only after the quota has admitted
// the call (issue 30 item 10).
import t from 'tap';
import { gatewayWithSimulator } from '../helpers/gateway.js';
import { console_, organization, provision, usageRows } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';

const db = await testDatabase(t);
if (db !== null) {
  const { gw, sim } = await gatewayWithSimulator(t, db, { env: { BILLING_FLUSH_MS: '0' }, workers: 2 });

  const post = async (key: string, body: unknown, signal?: AbortSignal): Promise<Response> =>
    fetch(`${gw.url}/v1/responses`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body), signal });

  /** A continuation naming `previous`: its status, its body, and how long it took (ms, measured here). */
  const continueFrom = async (key: string, previous: string): Promise<{ status: number; body: any; ms: number }> => {
    const at = performance.now();
    const res = await post(key, { model: 'nw-swift-1', previous_response_id: previous, input: 'go on [sim:words=2]' });
    const text = await res.text();
    return { status: res.status, body: JSON.parse(text), ms: performance.now() - at };
  };

  /** The events of a whole SSE body. */
  const events = (text: string): any[] =>
    text
      .split('\n\n')
      .filter((f) => f.startsWith('event: '))
      .map((f) => JSON.parse(f.split('\n')[1]!.slice('data: '.length)));

  const median = (xs: number[]): number => {
    const s = [...xs].sort((a, b) => a - b);
    return (s[(s.length - 1) >> 1]! + s[s.length >> 1]!) / 2;
  };

  t.test('issue 38 item 1: the id of one\'s own stream that ended in response.failed is accepted', async (t) => {
    const { key } = await provision(gw.url);
    // The simulator drops the connection after two content chunks: the gateway ends the stream with response.failed.
    const res = await post(key, { model: 'nw-swift-1', stream: true, input: 'hello [sim:words=20][sim:fail_after=2]' });
    t.equal(res.status, 200);
    const evs = events(await res.text());
    t.equal(evs[0].type, 'response.created');
    t.equal(evs[evs.length - 1].type, 'response.failed', 'the stream failed mid-way');
    const id = evs[0].response.id;
    // Two workers: the continuation may land on either (the other asks the store).
    for (let i = 0; i < 4; i++) {
      const next = await continueFrom(key, id);
      t.equal(next.status, 200, JSON.stringify(next.body).slice(0, 200));
    }
  });

  t.test('issue 38 item 1: the id of a stream the client closed after response.created is accepted', async (t) => {
    const { key, orgId } = await provision(gw.url);
    const abort = new AbortController();
    // Slow chunks: the client reads response.created, then leaves while the answer is still coming.
    const res = await post(key, { model: 'nw-swift-1', stream: true, input: 'hello [sim:words=50][sim:delay_ms=200]' }, abort.signal);
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes('\n\n')) {
      const { value, done } = await reader.read();
      if (done) break;
      text += Buffer.from(value).toString('utf8');
    }
    const created = events(text)[0];
    t.equal(created.type, 'response.created');
    abort.abort();
    await reader.cancel().catch(() => {});
    const id = created.response.id;
    // The call is settled as cancelled, so the client's leaving was seen; then the id is its organization's.
    for (let i = 0; i < 50 && !(await usageRows(gw.url, orgId)).some((r) => r.request_id === id && r.outcome === 'cancelled'); i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    t.ok((await usageRows(gw.url, orgId)).some((r) => r.request_id === id && r.outcome === 'cancelled'), 'settled as cancelled');
    for (let i = 0; i < 4; i++) {
      const next = await continueFrom(key, id);
      t.equal(next.status, 200, JSON.stringify(next.body).slice(0, 200));
    }
  });

  t.test('issue 30 item 10: another organization\'s id and an unknown one are refused alike, in the same time', async (t) => {
    const theirs = await provision(gw.url);
    const mine = await provision(gw.url);
    const first = await post(theirs.key, { model: 'nw-swift-1', input: 'hello [sim:words=2]' });
    const theirId = ((await first.json()) as { id: string }).id;
    t.equal((await continueFrom(theirs.key, theirId)).status, 200, 'their own continuation is accepted');
    const rowsBefore = (await usageRows(gw.url, mine.orgId)).length;
    const simBefore = sim.requestCount();
    const another: number[] = [];
    const unknown: number[] = [];
    const bodies = new Set<string>();
    // Interleaved (ABBA), so a load spike on this shared machine falls on both sides alike.
    for (let i = 0; i < 20; i++) {
      const unknownId = 'req_' + crypto.randomUUID().replaceAll('-', '');
      const pair = i % 2 === 0 ? [theirId, unknownId] : [unknownId, theirId];
      for (const id of pair) {
        const r = await continueFrom(mine.key, id);
        t.equal(r.status, 400);
        bodies.add(JSON.stringify(r.body));
        (id === theirId ? another : unknown).push(r.ms);
      }
    }
    t.same([...bodies].map((b) => JSON.parse(b)), [{ error: { message: JSON.parse([...bodies][0]!).error.message, type: 'invalid_request_error', param: 'previous_response_id', code: 'invalid_request' } }], 'one envelope, one message for both');
    const a = median(another);
    const u = median(unknown);
    t.comment(`median refusal: another organization's id ${a.toFixed(1)} ms, an unknown id ${u.toFixed(1)} ms`);
    t.ok(Math.abs(a - u) < 15, `medians within 15 ms (${a.toFixed(1)} vs ${u.toFixed(1)} ms)`);
    t.equal(sim.requestCount(), simBefore, 'no supplier call');
    const org = await organization(gw.url, mine.orgId);
    t.same([org.held, org.open_holds], ['0.00', 0], 'every refused call\'s hold was released');
    t.equal((await usageRows(gw.url, mine.orgId)).length, rowsBefore, 'no usage row for a refusal');
  });

  t.test('issue 30 item 10: a key whose quota is exhausted gets 429 before any lookup', async (t) => {
    const { key, orgId } = await provision(gw.url);
    await console_(gw.url, 'PATCH', `/organizations/${orgId}`, { quota_per_minute: 2 });
    const ok = { model: 'nw-swift-1', input: 'x [sim:words=1]' };
    const own = await post(key, ok);
    t.equal(own.status, 200);
    const ownId = ((await own.json()) as { id: string }).id;
    t.equal((await post(key, ok)).status, 200, 'the second call of the minute is admitted');
    const times: number[] = [];
    for (const previous of [ownId, 'req_' + crypto.randomUUID().replaceAll('-', ''), ownId, 'req_' + crypto.randomUUID().replaceAll('-', '')]) {
      const r = await continueFrom(key, previous);
      t.equal(r.status, 429, `refused by the quota, not by the check (${r.body.error?.code})`);
      t.equal(r.body.error.code, 'rate_limited');
      times.push(r.ms);
    }
    // A lookup that finds nothing waits one write interval plus 100 ms (120 ms by default) before it refuses:
    // a 429 quicker than that was never looked up.
    t.ok(Math.min(...times) < 120, `answered before any lookup could have ended (fastest ${Math.min(...times).toFixed(1)} ms)`);
  });
}
