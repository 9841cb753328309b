// POST /v1/embeddings through the official `openai` package, unchanged (it
// asks for base64 and decodes it), against a real gateway over real HTTP
// with the simulator as the supplier — answering base64, and answering float
// arrays ([sim:floats]) small and large (128 × 3072 floats, 8.4 MB): every
// embeddings reply is received and decoded by a pool thread (surface.fetchInPool). Refusals by name before any supplier
// request; one usage row per call; the balance moved by exactly price × tokens.
import { connect } from 'node:net';
import OpenAI from 'openai';
import t from 'tap';
import { parseMoney } from '../../src/money/money.js';
import { vectorOf } from '../../src/simulator/embeddings.js';
import { gatewayWithSimulator } from '../helpers/gateway.js';
import { organization, provision, usageRows, usageRowsAtLeast } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';

/** nw-embed-1's input price in the demo catalog (config/catalog.seed.json), micros per million tokens. */
const EMBED_PER_MTOK = 20000;

const db = await testDatabase(t);
if (db !== null) {
  const { gw, sim } = await gatewayWithSimulator(t, db, { env: { BILLING_FLUSH_MS: '0' } });
  const sdk = (key: string) => new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  const rowsOf = (orgId: string, n: number): Promise<any[]> => usageRowsAtLeast(gw.url, orgId, n);
  const post = async (key: string, body: unknown) => {
    const res = await fetch(`${gw.url}/v1/embeddings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { res, body: (await res.json()) as any };
  };
  /** The simulator's vector for `text`, as the float32 numbers it is. */
  const expected = (text: string, dims = 1536) => Array.from(vectorOf(text, dims));

  t.test('the simulator answers floats under [sim:floats] even when base64 is asked for', async (t) => {
    const ask = (input: string) =>
      fetch(`${sim.url}/alpha/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'embed-1', input: [input], encoding_format: 'base64' }) }).then((r) => r.json()) as Promise<any>;
    t.type((await ask('plain')).data[0].embedding, 'string');
    t.ok(Array.isArray((await ask('x [sim:floats]')).data[0].embedding));
  });

  /** The length of the simulator's own reply to `input`: a small reply is one piece, a large one is read in blocks (suppliers/reply-limits.ts). */
  const supplierReplyLength = (input: string[]) =>
    fetch(`${sim.url}/alpha/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'embed-1', input, encoding_format: 'base64' }) }).then((r) => r.text()).then((x) => x.length);
  const cases: Array<[string, string[], number, 'small' | 'large']> = [
    ['the supplier answers base64, a small reply', ['first text [sim:dims=16]', 'second text'], 16, 'small'],
    ['the supplier answers base64, passed through', ['first text', 'second text', 'third'], 1536, 'small'],
    ['the supplier answers floats, a small reply', ['floats please [sim:floats] [sim:dims=64]', 'second text'], 64, 'small'],
    ['the supplier answers floats, 128 × 3072', Array.from({ length: 128 }, (_, i) => (i === 0 ? '[sim:floats] [sim:dims=3072] input 0' : `input ${i}`)), 3072, 'large'],
  ];
  for (const [name, input, dims, size] of cases) {
    t.test(`embeddings.create: ${name}; values = the simulator's float32, exactly; one usage row, balance moved by price × tokens`, async (t) => {
      const { key, orgId } = await provision(gw.url, { balance: '5.00' });
      const before = parseMoney((await organization(gw.url, orgId)).balance)!;
      const { data: reply, response } = await sdk(key).embeddings.create({ model: 'embed', input }).withResponse();
      t.equal(reply.object, 'list');
      t.equal(reply.model, 'embed', 'the model as the caller named it');
      t.equal(reply.data.length, input.length);
      let exact = true;
      for (let i = 0; i < input.length; i++) {
        t.equal(reply.data[i]!.index, i, 'in input order');
        t.equal(reply.data[i]!.object, 'embedding');
        const want = expected(input[i]!, dims);
        const got = reply.data[i]!.embedding;
        if (got.length !== want.length || got.some((v, j) => !Object.is(v, want[j]))) exact = false;
      }
      t.ok(exact, `every component of every vector equals the simulator's float32 (${input.length} × ${dims})`);
      t.ok(reply.usage.prompt_tokens > 0);
      t.equal(reply.usage.total_tokens, reply.usage.prompt_tokens);
      const length = await supplierReplyLength(input);
      t.equal(length > 1 << 20, size === 'large', `the supplier's reply (${length} characters) is ${size}`);
      const rows = await rowsOf(orgId, 1);
      t.equal(rows.length, 1, 'one usage row');
      const row = rows[0];
      t.equal(row.request_id, response.headers.get('x-request-id'));
      t.same([row.surface, row.outcome, row.input_tokens, row.output_tokens, row.image_units], ['embeddings', 'completed', reply.usage.prompt_tokens, 0, 0]);
      // Price per million tokens, rounded up once per call; worked out here in integers, not with the gateway's own code.
      const cost = Number((BigInt(reply.usage.prompt_tokens) * BigInt(EMBED_PER_MTOK) + 999_999n) / 1_000_000n);
      t.equal(parseMoney(row.charged), cost, 'charged = price × input tokens');
      const org = await organization(gw.url, orgId);
      t.equal(parseMoney(org.balance), before - cost, 'the balance moved by exactly that');
      t.equal(org.held, '0.00', 'no hold left');
    });
  }

  t.test('no supplier usage: the input is counted locally, still input only', async (t) => {
    const { key, orgId } = await provision(gw.url, { balance: '5.00' });
    const reply = await sdk(key).embeddings.create({ model: 'embed', input: ['count me [sim:no_usage]', 'and me'] });
    t.ok(reply.usage.prompt_tokens > 0);
    const [row] = await rowsOf(orgId, 1);
    t.same([row.metered_source, row.input_tokens, row.output_tokens, row.image_units], ['local', reply.usage.prompt_tokens, 0, 0]);
  });

  t.test('refusals by name, before any supplier request, nothing charged', async (t) => {
    const { key, orgId } = await provision(gw.url, { balance: '5.00' });
    const refusals: Array<[string, unknown, string]> = [
      ['encoding_format float', { model: 'embed', input: ['x'], encoding_format: 'float' }, 'encoding_format'],
      ['encoding_format absent (implies float)', { model: 'embed', input: ['x'] }, 'encoding_format'],
      ['encoding_format another value', { model: 'embed', input: ['x'], encoding_format: 'binary' }, 'encoding_format'],
      ['input over 128 members', { model: 'embed', input: new Array(129).fill('x'), encoding_format: 'base64' }, 'input'],
      ['input over 131072 bytes', { model: 'embed', input: ['a'.repeat(65536), 'b'.repeat(65537)], encoding_format: 'base64' }, 'input'],
      ['input a bare string', { model: 'embed', input: 'x', encoding_format: 'base64' }, 'input'],
      ['stream does not exist here', { model: 'embed', input: ['x'], encoding_format: 'base64', stream: true }, 'stream'],
    ];
    for (const [name, body, param] of refusals) {
      const count = sim.requestCount();
      const { res, body: err } = await post(key, body);
      t.equal(res.status, 400, name);
      t.same(Object.keys(err.error).sort(), ['code', 'message', 'param', 'request_id', 'type'], `${name}: the embeddings envelope`);
      t.same([err.error.code, err.error.type, err.error.param], ['invalid_request', 'invalid_request_error', param], `${name}: refused naming ${param}`);
      t.equal(err.error.request_id, res.headers.get('x-request-id'));
      t.equal(sim.requestCount(), count, `${name}: no supplier request`);
    }
    const sdkFloat = await sdk(key).embeddings.create({ model: 'embed', input: ['x'], encoding_format: 'float' }).catch((e) => e);
    t.ok(sdkFloat instanceof OpenAI.BadRequestError, 'the SDK sees a BadRequestError for float');
    t.equal(sdkFloat.param, 'encoding_format');
    const org = await organization(gw.url, orgId);
    t.same([org.balance, org.held], ['5.00', '0.00'], 'nothing charged, nothing held');
    t.equal((await usageRows(gw.url, orgId)).length, 0, 'no usage row for a refusal before reservation');
  });

  t.test('a large reply to a client that reads slowly arrives whole (written as the socket drains), and the connection serves the next call', async (t) => {
    const { key } = await provision(gw.url, { balance: '5.00' });
    const input = Array.from({ length: 128 }, (_, i) => (i === 0 ? '[sim:floats] [sim:dims=3072] slow reader' : `slow ${i}`));
    const body = JSON.stringify({ model: 'embed', input, encoding_format: 'base64' });
    const request = `POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    const url = new URL(gw.url);
    const socket = connect(Number(url.port), url.hostname);
    t.teardown(() => socket.destroy());
    let received = Buffer.alloc(0);
    let pauses = 0;
    /** One whole response off the socket: its head and body, framed by its Content-Length; the reader pauses 20 ms every 256 KB. */
    const response = () =>
      new Promise<{ head: string; body: Buffer }>((resolve, reject) => {
        let sinceLastPause = 0;
        const onData = (chunk: Buffer) => {
          received = Buffer.concat([received, chunk]);
          sinceLastPause += chunk.length;
          if (sinceLastPause > 256 * 1024) {
            sinceLastPause = 0;
            pauses++;
            socket.pause();
            setTimeout(() => socket.resume(), 20);
          }
          const end = received.indexOf('\r\n\r\n');
          if (end < 0) return;
          const head = received.subarray(0, end).toString('latin1');
          const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? NaN);
          if (received.length < end + 4 + length) return;
          socket.off('data', onData).off('error', reject);
          const whole = received.subarray(end + 4, end + 4 + length);
          received = received.subarray(end + 4 + length);
          resolve({ head, body: whole });
        };
        socket.on('data', onData).on('error', reject);
      });
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write(request);
    const first = await response();
    t.match(first.head, /^HTTP\/1\.1 200/);
    t.ok(pauses >= 4, `the reader paused ${pauses} times`);
    const reply = JSON.parse(first.body.toString('utf8'));
    t.same(Object.keys(reply), ['object', 'data', 'model', 'usage']);
    t.equal(reply.data.length, 128);
    let exact = true;
    for (let i = 0; i < 128; i++) {
      const got = Buffer.from(reply.data[i].embedding, 'base64');
      const want = Buffer.from(vectorOf(input[i]!, 3072).buffer);
      if (reply.data[i].index !== i || !got.equals(want)) exact = false;
    }
    t.ok(exact, 'every vector is the simulator\'s float32, byte for byte');
    socket.write(request);
    const second = await response();
    t.ok(second.body.equals(first.body), 'the same connection answers the next call, the same bytes');
    t.equal(received.length, 0, 'nothing after the framed bodies');
  });

  t.test('a model not served on embeddings: 404 in the embeddings envelope', async (t) => {
    const { key } = await provision(gw.url);
    const { res, body } = await post(key, { model: 'nw-swift-1', input: ['x'], encoding_format: 'base64' });
    t.equal(res.status, 404);
    t.same([body.error.code, body.error.type], ['model_not_found', 'not_found_error']);
  });
}
