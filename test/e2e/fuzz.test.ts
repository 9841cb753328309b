// Fuzzing the gateway over real HTTP (issue 12, "What must show"): seeded
// structure-aware mutations of every model surface's body and of every
// console body, text-level damage (truncation, flipped bytes, deep nesting),
// random bytes and bad percent-encodings in paths and headers. Asserted:
// the worker never restarts (same pid), every refusal is a 4xx in the right
// envelope (never a 5xx), a 2xx only for a well-formed success, and no hold
// is left in the ledger afterwards. Bounded by FUZZ_MS (default 20 s of
// requests). Replay a run with FUZZ_SEED=<the printed seed>.
import t from 'tap';
import { startGateway, waitReady } from '../helpers/gateway.js';
import { chatEnvelopeFault, embeddingsEnvelopeFault, imagesEnvelopeFault, messagesEnvelopeFault, restEnvelopeFault } from '../helpers/envelopes.js';
import { ADMIN_TOKEN, console_, organization, provision } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';
import { rawRequest, workerPids, type RawAnswer } from '../helpers/workers.js';
import { prng } from '../helpers/prng.js';

const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const BUDGET_MS = Number(process.env.FUZZ_MS ?? 20_000);

const rand = prng(SEED);
const int = (n: number) => Math.floor(rand() * n);
const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)];

type Envelope = 'chat' | 'responses' | 'messages' | 'count_tokens' | 'embeddings' | 'images' | 'rest';

/**
 * The model surfaces: path, envelope and sample bodies. A new surface is one
 * entry here (its samples should ask the simulator for short answers).
 */
const SURFACES: Array<{ name: string; path: string; envelope: Envelope; samples: unknown[] }> = [
  {
    name: 'chat',
    path: '/v1/chat/completions',
    envelope: 'chat',
    samples: [
      { model: 'nw-swift-1', messages: [{ role: 'user', content: 'hi [sim:words=2]' }] },
      { model: 'nw-swift-1', stream: true, stream_options: { include_usage: true }, max_tokens: 50, messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hi [sim:words=2]' }] },
      {
        model: 'nw-swift-1',
        n: 2,
        temperature: 0.5,
        stop: ['END'],
        tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { a: { type: 'string' } } } } }],
        tool_choice: 'auto',
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'go [sim:words=2]' }] },
          { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{"a":"b"}' } }] },
          { role: 'tool', tool_call_id: 'c1', content: 'ok' },
        ],
      },
    ],
  },
  {
    name: 'messages',
    path: '/v1/messages',
    envelope: 'messages',
    samples: [
      { model: 'ks-quill-1', max_tokens: 50, messages: [{ role: 'user', content: 'hi [sim:words=2]' }] },
      {
        model: 'ks-quill-1',
        max_tokens: 50,
        stream: true,
        system: [{ type: 'text', text: 'be brief' }],
        temperature: 0.5,
        stop_sequences: ['END'],
        tools: [{ name: 'f', input_schema: { type: 'object', properties: { a: { type: 'string' } } } }],
        tool_choice: { type: 'auto' },
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'go [sim:words=2]' }] },
          { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'f', input: { a: 'b' } }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'ok' }] },
        ],
      },
    ],
  },
  {
    name: 'count_tokens',
    path: '/v1/messages/count_tokens',
    envelope: 'count_tokens',
    samples: [{ model: 'ks-quill-1', system: 'be brief', tools: [{ name: 'f', input_schema: { type: 'object' } }], messages: [{ role: 'user', content: 'hi' }] }],
  },
  {
    name: 'responses',
    path: '/v1/responses',
    envelope: 'responses',
    samples: [
      { model: 'nw-swift-1', input: 'hi [sim:words=2]' },
      {
        model: 'nw-swift-1',
        stream: true,
        instructions: 'be brief',
        max_output_tokens: 50,
        tools: [{ type: 'function', name: 'f', parameters: { type: 'object' } }],
        tool_choice: 'auto',
        input: [
          { type: 'message', role: 'user', content: 'go [sim:words=2]' },
          { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}' },
          { type: 'function_call_output', call_id: 'c1', output: 'ok' },
        ],
      },
    ],
  },
  {
    name: 'embeddings',
    path: '/v1/embeddings',
    envelope: 'embeddings',
    samples: [{ model: 'nw-embed-1', encoding_format: 'base64', input: ['hi', 'there'] }],
  },
  {
    name: 'images',
    path: '/v1/images/generations',
    envelope: 'images',
    samples: [{ model: 'au-canvas-1', prompt: 'a kite', n: 1, size: '256x256' }],
  },
];

/** Hostile values a member may be given. */
const HOSTILE: unknown[] = [
  null, true, false, 0, -1, 1.5, 1e308, -1e308, 2 ** 53 + 2, -(2 ** 63), '', 'x', 'x'.repeat(5000), '\u0000', '\ud800', '😀'.repeat(50),
  // Directives that make the simulator fail (status, fail_after) are left out: those 5xx would be the supplier's.
  '[sim:no_usage] [sim:words=2]', '[sim:tool=f]', 'nw-swift-1', 'no-such-model',
  [], [null], [[[[[]]]]], {}, { a: { b: { c: {} } } }, '12', 'NaN', '1e400', '-0', '0.0000001', '99999999999999999999.999999',
];

/** A fresh copy each time: the tree is mutated in place, and a shared array could end up inside itself. */
const hostile = (): unknown => structuredClone(pick(HOSTILE));

function clone<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

function deepValue(depth: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = rand() < 0.5 ? [v] : { k: v };
  return v;
}

/** One structural change somewhere in the tree (its path chosen at random). */
function mutateTree(root: any): any {
  if (root === null || typeof root !== 'object') return hostile();
  const keys = Object.keys(root);
  const k = keys.length > 0 ? pick(keys) : null;
  const roll = rand();
  if (k !== null && roll < 0.35 && root[k] !== null && typeof root[k] === 'object') {
    root[k] = mutateTree(root[k]);
    return root;
  }
  if (k !== null && roll < 0.5) {
    if (Array.isArray(root)) root.splice(Number(k), 1);
    else delete root[k];
  } else if (k !== null && roll < 0.8) root[k] = hostile();
  else if (k !== null && roll < 0.87) root[k] = [root[k]];
  else if (k !== null && roll < 0.92) root[k] = deepValue(20 + int(200));
  else if (Array.isArray(root)) root.push(hostile());
  else root[pick(['unknown', 'model', 'stream', 'n', 'max_tokens', '__proto__', 'constructor', 'balance', 'amount'])] = hostile();
  return root;
}

/** A body to send and whether it is certainly invalid (then only a 4xx will do). */
function mutateBody(sample: unknown): { body: Buffer; invalid: boolean; type: string } {
  const roll = rand();
  if (roll < 0.6) {
    let v: unknown = clone(sample);
    for (let i = 0, n = 1 + int(3); i < n; i++) v = mutateTree(v);
    return { body: Buffer.from(JSON.stringify(v) ?? 'null'), invalid: false, type: 'application/json' };
  }
  const text = Buffer.from(JSON.stringify(sample));
  if (roll < 0.7) return { body: text.subarray(0, int(text.length)), invalid: true, type: 'application/json' };
  if (roll < 0.78) {
    // A flipped byte may leave valid JSON (inside a string): not certainly invalid.
    const b = Buffer.from(text);
    b[int(b.length)] = int(256);
    return { body: b, invalid: false, type: 'application/json' };
  }
  if (roll < 0.86) {
    const at = text.lastIndexOf('}');
    const n = 65 + int(20_000);
    const body = Buffer.concat([text.subarray(0, at), Buffer.from(`,"deep":${'['.repeat(n)}${']'.repeat(n)}}`)]);
    return { body, invalid: true, type: 'application/json' };
  }
  if (roll < 0.9) return { body: Buffer.from(Array.from({ length: int(200) }, () => int(256))), invalid: true, type: 'application/json' };
  if (roll < 0.95) return { body: text, invalid: true, type: pick(['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data', 'json', '']) };
  // Duplicate members: JSON.parse keeps the last; whatever the gateway does with it must be a clean answer.
  return { body: Buffer.from(text.toString().replace('{', `{"model":${JSON.stringify(hostile())},`)), invalid: false, type: 'application/json' };
}

const BAD_SEGMENTS = ['%ff', '%', '%e0%80', '%zz', '%00', '%2e%2e', '..', '%2f', 'a'.repeat(3000), '%ff'.repeat(500)];

/** Random bytes for a header value or path: no CR/LF (those would frame a different request, not damage this one). */
function randomBytes(n: number): Buffer {
  return Buffer.from(Array.from({ length: n }, () => {
    const b = int(256);
    return b === 10 || b === 13 ? 0x41 : b;
  }));
}

/** The end a stream of each surface must reach when it succeeds. */
const STREAM_END: Partial<Record<Envelope, string>> = { chat: 'data: [DONE]', messages: 'event: message_stop', responses: 'response.completed' };

function okSuccess(envelope: Envelope, answer: RawAnswer): string | null {
  const end = STREAM_END[envelope];
  if (end !== undefined && (answer.headers['content-type'] ?? '').startsWith('text/event-stream')) return answer.body.includes(end) ? null : `a stream without ${end}`;
  if (envelope !== 'rest') {
    const body = JSON.parse(answer.body);
    const ok =
      // GET /v1/key (chat's family of errors) answers the caller's key object.
      envelope === 'chat' ? (body.object === 'chat.completion' && Array.isArray(body.choices)) || (body.object === 'api_key' && typeof body.id === 'string')
      : envelope === 'messages' ? body.type === 'message' && Array.isArray(body.content)
      : envelope === 'count_tokens' ? Number.isSafeInteger(body.input_tokens) && body.estimated === true
      : envelope === 'responses' ? body.object === 'response' && Array.isArray(body.output)
      : envelope === 'embeddings' ? body.object === 'list' && Array.isArray(body.data)
      : typeof body.created === 'number' && Array.isArray(body.data);
    return ok ? null : `not a ${envelope} reply`;
  }
  const body = answer.body === '' ? {} : JSON.parse(answer.body);
  return typeof body === 'object' && body !== null && !('error' in body) ? null : 'not a console object';
}

const ENVELOPE_FAULT: Record<Exclude<Envelope, 'rest'>, (body: unknown) => string | null> = {
  chat: chatEnvelopeFault,
  responses: chatEnvelopeFault,
  messages: messagesEnvelopeFault,
  count_tokens: messagesEnvelopeFault,
  embeddings: embeddingsEnvelopeFault,
  images: imagesEnvelopeFault,
};

function head(method: string, path: string | Buffer, headers: Array<[string, string | Buffer]>): Buffer {
  const parts: Buffer[] = [Buffer.from(`${method} `), Buffer.isBuffer(path) ? path : Buffer.from(path), Buffer.from(' HTTP/1.1\r\nHost: x\r\nConnection: close')];
  for (const [k, v] of headers) parts.push(Buffer.from(`\r\n${k}: `), Buffer.isBuffer(v) ? v : Buffer.from(v));
  return Buffer.concat(parts);
}

const db = await testDatabase(t);
if (db !== null) {
  const gw = await startGateway({ env: { DATABASE_URL: db, ADMIN_TOKEN, BILLING_FLUSH_MS: '0' } });
  await waitReady(gw); // /readyz answers 503 until the warm pool thread is ready: a fuzzed GET /readyz must find it ready
  t.teardown(() => gw.stop());

  t.test('fuzz: no worker restarts, every answer a 4xx in its envelope (2xx only when well-formed), no hold left', async (t) => {
    t.comment(`FUZZ_SEED=${SEED}`);
    console.error(`fuzz: FUZZ_SEED=${SEED}`);
    const pids = workerPids(gw.proc.pid!);
    t.equal(pids.length, 1, 'one worker to watch');
    const caller = await provision(gw.url, { balance: '1000.00' });
    await console_(gw.url, 'PATCH', `/organizations/${caller.orgId}`, { quota_per_second: 100000, quota_per_minute: 6000000 });
    const target = await provision(gw.url, { balance: '10.00', name: 'console fuzz target' });
    const targetKey = await console_(gw.url, 'GET', `/keys/${target.keyId}`);

    /** Console routes with a body, ids filled in, each with a valid sample. */
    const CONSOLE_BODIES: Array<{ method: string; path: string; sample: unknown }> = [
      { method: 'POST', path: '/console/v1/organizations', sample: { name: 'fuzz org', balance: '1.00' } },
      { method: 'PATCH', path: `/console/v1/organizations/${target.orgId}`, sample: { name: 'renamed', quota_per_second: 50, quota_per_minute: null } },
      { method: 'POST', path: `/console/v1/organizations/${target.orgId}/credits`, sample: { amount: '0.01', target: 'balance', note: 'fuzz' } },
      { method: 'POST', path: `/console/v1/organizations/${target.orgId}/keys`, sample: { name: 'fuzz key', scope: { modality_codes: ['text_generation'] } } },
      { method: 'PATCH', path: `/console/v1/keys/${target.keyId}`, sample: { version: targetKey.version, name: 'renamed key' } },
    ];
    const PATHS = ['/v1/models', '/v1/key', '/healthz', '/readyz', '/console/v1/organizations/:id', '/console/v1/keys/:id', '/console/v1/keys/:id/revoke', '/console/v1/organizations/:id/usage', '/nothing/here'];

    const counts = { requests: 0, success: 0, refused: 0, closed: 0 };
    const statuses = new Map<number, number>();
    const failures: string[] = [];
    const fail = (what: string) => {
      if (failures.length < 20) failures.push(what);
    };

    const check = (what: string, envelope: Envelope, answer: RawAnswer, invalid: boolean, mayClose: boolean) => {
      counts.requests++;
      if (answer.status === null) {
        counts.closed++;
        if (!mayClose) fail(`${what}: no answer`);
        return;
      }
      statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
      if (answer.status >= 500) return fail(`${what}: ${answer.status} ${answer.body.slice(0, 200)}`);
      if (answer.status < 300) {
        counts.success++;
        if (invalid) return fail(`${what}: ${answer.status} for a body that is not valid`);
        let fault: string | null;
        try {
          fault = okSuccess(envelope, answer);
        } catch {
          fault = 'unparseable';
        }
        if (fault !== null) fail(`${what}: ${answer.status} but ${fault}`);
        return;
      }
      counts.refused++;
      let body: unknown;
      try {
        body = JSON.parse(answer.body);
      } catch {
        return fail(`${what}: ${answer.status} with a body that is not JSON: ${answer.body.slice(0, 100)}`);
      }
      // An unknown path is the service's own 404, whatever surface it was meant for.
      const restAnswer = envelope === 'rest' || (answer.status === 404 && (body as any)?.error?.code === 'not_found');
      const fault = restAnswer ? restEnvelopeFault(body, answer.headers['x-request-id']) : ENVELOPE_FAULT[envelope](body);
      if (fault !== null) fail(`${what}: ${answer.status} in the wrong envelope (${fault}): ${answer.body.slice(0, 200)}`);
    };

    const deadline = Date.now() + BUDGET_MS;
    let round = 0;
    let pidChange: string | null = null;
    const watch = setInterval(() => {
      const now = workerPids(gw.proc.pid!);
      if (pidChange === null && now.join() !== pids.join()) pidChange = `worker pids ${pids} became ${now} after ${counts.requests} requests`;
    }, 100);

    // Lane 1, one request at a time: mutated bodies of every model surface and console route.
    const bodies = async (): Promise<void> => {
      while (Date.now() < deadline && pidChange === null) {
        round++;
        for (const s of SURFACES) {
          const m = mutateBody(pick(s.samples));
          const headers: Array<[string, string]> = [['Authorization', `Bearer ${caller.key}`], ['Content-Length', String(m.body.length)]];
          if (m.type !== '') headers.push(['Content-Type', m.type]);
          const answer = await rawRequest(gw.port, head('POST', s.path, headers), m.body, 15_000);
          check(`${s.name} round ${round}`, s.envelope, answer, m.invalid, false);
        }
        // Console: mutated bodies with the admin token (and, now and then, without: then always the 401).
        const c = pick(CONSOLE_BODIES);
        const m = mutateBody(c.sample);
        const admin = rand() < 0.85;
        const headers: Array<[string, string]> = [['Content-Length', String(m.body.length)]];
        if (admin) headers.push(['Authorization', `Bearer ${ADMIN_TOKEN}`]);
        if (m.type !== '') headers.push(['Content-Type', m.type]);
        const answer = await rawRequest(gw.port, head(c.method, c.path, headers), m.body, 15_000);
        check(`console ${c.method} ${c.path} round ${round}`, 'rest', answer, m.invalid || !admin, false);
        if (!admin && answer.status !== 401) fail(`console without the token: ${answer.status}`);
      }
    };

    // Lanes 2..n, in parallel: paths and headers with bad percent-encoding and random bytes. uWS's own
    // parser refuses some (a raw control byte) by leaving the connection to its idle timeout: a short wait.
    const heads = async (): Promise<void> => {
      while (Date.now() < deadline && pidChange === null) {
        const route = pick(PATHS).replace(':id', rand() < 0.5 ? pick(BAD_SEGMENTS) : target.orgId);
        const rawPath =
          rand() < 0.3
            ? Buffer.concat([Buffer.from('/console/v1/keys/'), randomBytes(1 + int(30)).map((b) => (b === 0x20 ? 0x41 : b))])
            : Buffer.from(route + (rand() < 0.3 ? pick(BAD_SEGMENTS) : ''));
        const headers: Array<[string, string | Buffer]> = [];
        const hdr = pick(['Authorization', 'x-api-key', 'Content-Type', 'If-None-Match', 'Idempotency-Key', 'Content-Length', 'Transfer-Encoding']);
        headers.push([hdr, rand() < 0.5 ? randomBytes(int(100)) : pick(['Bearer ' + ADMIN_TOKEN, `Bearer ${caller.key}`, 'Bearer %ff', '%e0%80', 'chunked', '-1', '99999999999999999999', '\u00ff\u00fe'])]);
        if (rand() < 0.5) headers.push(['Authorization', `Bearer ${ADMIN_TOKEN}`]);
        const method = pick(['GET', 'GET', 'POST', 'POST', 'PATCH', 'DELETE', 'PUT', 'OPTIONS']);
        const h = head(method, rawPath, headers);
        const printable = [...h].every((b) => b >= 0x20 && b < 0x7f);
        // Answered heads come back in milliseconds; one uWS left to its idle timeout is given up on soon.
        const answer = await rawRequest(gw.port, h, '', printable ? 5000 : 300);
        const p = rawPath.toString('latin1');
        // Path fuzz lands on REST routes (console, ops, models, unknown) or on /v1/key (chat envelope).
        const envelope: Envelope = p === '/v1/key' ? 'chat' : 'rest';
        // A 2xx here is a real route answering a well-formed request (e.g. a GET with the token).
        check(`${method} ${p.slice(0, 60)} [${hdr}]`, envelope, answer, false, !printable || hdr === 'Content-Length' || hdr === 'Transfer-Encoding');
      }
    };
    await Promise.all([bodies(), ...Array.from({ length: 16 }, heads)]);
    clearInterval(watch);
    if (pidChange !== null) failures.unshift(pidChange);

    t.comment(`FUZZ_SEED=${SEED}: ${round} rounds, ${JSON.stringify(counts)}, statuses ${JSON.stringify(Object.fromEntries(statuses))}`);
    t.same(failures, [], `no failure (FUZZ_SEED=${SEED})`);
    t.same(workerPids(gw.proc.pid!), pids, 'the worker never restarted');
    t.notOk(gw.logs.some((l) => l.msg === 'worker died; starting a replacement'), 'no worker died');
    t.ok(counts.requests > 200, `${counts.requests} requests`);
    t.ok(counts.refused > counts.requests / 3, 'most mutations were refused');
    // Every hold is settled or released once its call ends.
    const end = Date.now() + 10_000;
    let holds = -1;
    for (const orgId of [caller.orgId, target.orgId]) {
      while (Date.now() < end) {
        const org = await organization(gw.url, orgId);
        holds = org.open_holds;
        if (holds === 0 && org.held === '0.00') break;
        await new Promise((r) => setTimeout(r, 100));
      }
      t.equal(holds, 0, `no hold left for ${orgId === caller.orgId ? 'the caller' : 'the console target'}`);
    }
  });
}
