// Issue 12 item 5: (a) a per-key cap on model calls in progress, refused
// with 429 before any reservation, whose slots come back exactly once
// whatever the call's outcome; (b) JSON nesting bounded at parse time on the
// model surfaces (inline and in the worker-thread pool) and the console.
import t from 'tap';
import { startGateway } from '../helpers/gateway.js';
import { chatEnvelopeFault, restEnvelopeFault } from '../helpers/envelopes.js';
import { ADMIN_TOKEN, console_, organization, provision, usageRows } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';

const CAP = 3;

const db = await testDatabase(t);
if (db !== null) {
  const gw = await startGateway({ env: { DATABASE_URL: db, ADMIN_TOKEN, MAX_CONCURRENT_PER_KEY: String(CAP), BILLING_FLUSH_MS: '0' } });
  t.teardown(() => gw.stop());
  const chatUrl = `${gw.url}/v1/chat/completions`;
  const headers = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });
  const chat = (key: string, body: unknown, signal?: AbortSignal) =>
    fetch(chatUrl, { method: 'POST', headers: headers(key), body: typeof body === 'string' ? body : JSON.stringify(body), signal });

  /** A stream that runs for seconds; resolves once its first bytes arrived. */
  async function openStream(key: string): Promise<{ status: number; stop: () => void }> {
    const ac = new AbortController();
    const res = await chat(key, { model: 'nw-swift-1', stream: true, messages: [{ role: 'user', content: '[sim:words=100] [sim:delay_ms=100]' }] }, ac.signal);
    if (res.status !== 200) {
      await res.text();
      return { status: res.status, stop: () => {} };
    }
    const reader = res.body!.getReader();
    await reader.read();
    return { status: 200, stop: () => ac.abort() };
  }

  async function openHolds(orgId: string): Promise<number> {
    return (await organization(gw.url, orgId)).open_holds;
  }

  async function until(what: string, pred: () => Promise<boolean>, ms = 5000): Promise<void> {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      if (await pred()) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`not within ${ms} ms: ${what}`);
  }

  /** A stream the cap should admit; a slot freed by a call that just ended may take a moment to come back. */
  async function admitted(key: string): Promise<{ status: number; stop: () => void }> {
    let last = { status: 0, stop: () => {} };
    const end = Date.now() + 1500;
    while (Date.now() < end) {
      last = await openStream(key);
      if (last.status !== 429) return last;
      await new Promise((r) => setTimeout(r, 50));
    }
    return last;
  }

  /** A unary call the cap should admit (see admitted). */
  async function admittedUnary(key: string): Promise<number> {
    let status = 0;
    const end = Date.now() + 1500;
    while (Date.now() < end) {
      const res = await chat(key, { model: 'nw-swift-1', messages: [{ role: 'user', content: '[sim:words=3]' }] });
      status = res.status;
      await res.text();
      if (status !== 429) return status;
      await new Promise((r) => setTimeout(r, 50));
    }
    return status;
  }

  t.test('issue 12 item 5a: a key over its concurrency cap gets 429 before any reservation; slots come back exactly once', async (t) => {
    const { key, orgId } = await provision(gw.url);
    const a = await openStream(key);
    const b = await openStream(key);
    t.same([a.status, b.status], [200, 200], 'two slow streams running');

    // Calls that end every way there is, while two slots are taken: each must give its slot back once.
    const failed = await chat(key, { model: 'nw-swift-1', messages: [{ role: 'user', content: '[sim:status=500]' }] });
    t.equal(failed.status, 502, 'a call whose suppliers all fail (reserved, then released)');
    await failed.text();
    const invalid = await chat(key, { model: 'nw-swift-1', messages: [] });
    t.equal(invalid.status, 400, 'a call refused at validation');
    await invalid.text();
    const unknown = await chat(key, { model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] });
    t.equal(unknown.status, 404, 'a call for an unknown model');
    await unknown.text();
    const badJson = await chat(key, '{"model":');
    t.equal(badJson.status, 400, 'a call with bad JSON');
    await badJson.text();
    const aborted = await openStream(key);
    t.equal(aborted.status, 200, 'a stream the client then leaves');
    aborted.stop();
    await until('the aborted stream settled', async () => (await openHolds(orgId)) === 2);
    const ok = await admittedUnary(key);
    t.equal(ok, 200, 'a call that completes and settles');

    // Exactly one slot is free now: a slot given back twice would let a fourth call in.
    const c = await admitted(key);
    t.equal(c.status, 200, 'the third slot');
    t.equal(await openHolds(orgId), CAP, `${CAP} calls hold money`);
    const usageBefore = (await usageRows(gw.url, orgId)).length;
    const refused = await chat(key, { model: 'nw-swift-1', messages: [{ role: 'user', content: 'one too many' }] });
    t.equal(refused.status, 429, 'the call over the cap: 429');
    t.equal(refused.headers.get('retry-after'), '1');
    const body: any = await refused.json();
    t.equal(chatEnvelopeFault(body), null, 'in the chat envelope');
    t.equal(body.error.code, 'concurrency_limited');
    t.equal(body.error.type, 'rate_limit_error');
    t.equal(await openHolds(orgId), CAP, 'the refused call reserved nothing');
    t.equal((await usageRows(gw.url, orgId)).length, usageBefore, 'and left no usage row');

    // The cap is per key: another key of the same organization is not held back.
    const other = await console_(gw.url, 'POST', `/organizations/${orgId}/keys`, { name: 'second key' });
    const second = await chat(other.secret, { model: 'nw-swift-1', messages: [{ role: 'user', content: '[sim:words=2]' }] });
    t.equal(second.status, 200, 'another key of the organization');
    await second.text();

    for (const s of [a, b, c]) s.stop();
    await until('every stream settled', async () => (await openHolds(orgId)) === 0);
    const again = [await admitted(key), await admitted(key), await admitted(key)];
    t.same(again.map((s) => s.status), [200, 200, 200], 'all three slots are free again');
    const over = await openStream(key);
    t.equal(over.status, 429, 'and the fourth is refused');
    for (const s of again) s.stop();
    await until('the last streams settled', async () => (await openHolds(orgId)) === 0);
  });

  const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
  /** A chat body with `value` as the arguments of an assistant's tool call (raw JSON text). */
  const toolCallBody = (value: string) =>
    `{"model":"nw-swift-1","messages":[{"role":"user","content":"go [sim:words=2]"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":${value}}}]},{"role":"tool","tool_call_id":"call_1","content":"ok"}]}`;
  const PARAM = 'messages[1].tool_calls[0].function.arguments';

  t.test('issue 12 item 5b: 100k nested arrays in a tool argument: 400 naming the member, not a 500', async (t) => {
    const { key, orgId } = await provision(gw.url);
    for (const [what, depth] of [
      ['100k deep (over OFFLOAD_BODY_BYTES: prepared in the worker-thread pool)', 100_000],
      ['6000 deep (12 KB: prepared inline)', 6000],
      ['one level over the limit (inline)', 59],
    ] as const) {
      const res = await chat(key, toolCallBody(nested(depth)));
      t.equal(res.status, 400, `${what}: 400`);
      const body: any = await res.json();
      t.equal(chatEnvelopeFault(body), null, `${what}: the chat envelope`);
      t.equal(body.error.code, 'nesting_too_deep', `${what}: nesting_too_deep`);
      t.equal(body.error.param, PARAM, `${what}: names the member`);
    }
    // The body's root is level 1 and `arguments` sits at level 6: 58 more levels make 64, the default limit.
    const atLimit = await chat(key, toolCallBody(nested(58)));
    t.equal(atLimit.status, 200, 'exactly at the limit: served');
    await atLimit.text();
    // Brackets inside strings are text, not nesting (40 KB: the pool's scan; spaced, so the simulator's tokenizer is quick).
    const inString = await chat(key, toolCallBody(JSON.stringify('[ '.repeat(10_000) + '] '.repeat(10_000))));
    t.equal(inString.status, 200, 'the same brackets inside a string: served');
    await inString.text();
    t.equal(await openHolds(orgId), 0, 'no hold left');
    t.equal((await usageRows(gw.url, orgId)).length, 2, 'only the two served calls were billed');
  });

  t.test('issue 12 item 5b: a deep console body: 400 naming the member in the REST envelope', async (t) => {
    for (const depth of [100_000, 65]) {
      const res = await fetch(`${gw.url}/console/v1/organizations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: `{"name":"deep","balance":"1.00","extra":${nested(depth)}}`,
      });
      t.equal(res.status, 400, `${depth} deep: 400`);
      const body: any = await res.json();
      t.equal(restEnvelopeFault(body, res.headers.get('x-request-id')!), null, 'the REST envelope');
      t.equal(body.error.code, 'nesting_too_deep');
      t.same(body.error.field_details, [{ field: 'extra', issue: 'arrays and objects nest deeper than 64 levels here' }]);
    }
  });
}
