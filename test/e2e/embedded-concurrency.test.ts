// Issue 11: the embedded default under concurrent use. Two workers, 32 callers
// for 20 s mixing console and model calls (keys created, edited, revoked;
// credits; chat calls through the in-process simulator, unary and streamed;
// usage and organization reads). Asserts no 5xx, no warning or error in the
// gateway's log nor an ERROR in the server's, and, once the gateway stopped,
// balance = credits − usage to the micro for every organization.
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { Agent, request } from 'undici';
import { parseMoney } from '../../src/money/money.js';
import { openEmbeddedStore } from '../../src/store/embedded.js';
import { createPool } from '../../src/store/pool.js';
import { startGateway, tempDir } from '../helpers/gateway.js';

const ADMIN_TOKEN = 'concurrency-admin-token-0123456789';
const CALLERS = 32;
const DURATION_MS = Number(process.env.CONCURRENCY_MS ?? 20_000);
const ORGS = 6;

const dataDir = tempDir('tollgate-concurrency-');
t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
const dispatcher = new Agent({ connections: CALLERS, keepAliveTimeout: 10_000 });
t.teardown(() => dispatcher.close());

interface Org {
  id: string;
  /** Opening balance and every credit answered 201, in micros: what the test put in. */
  credited: number;
  keys: Array<{ id: string; secret: string }>;
}

t.test('item: 32 concurrent console and model calls for 20 s on the embedded default with 2 workers', async (t) => {
  const gw = await startGateway({
    dataDir,
    workers: 2,
    env: { ADMIN_TOKEN, QUOTA_PER_SECOND: '100000', QUOTA_PER_MINUTE: '10000000', LOG_LEVEL: 'info' },
  });
  const logStart = readFileSync(join(dataDir, 'postgres.log'), 'utf8').length;
  const statuses = new Map<string, number>();
  const fiveXX: string[] = [];
  const count = (op: string, status: number, body: string): void => {
    statuses.set(`${op} ${status}`, (statuses.get(`${op} ${status}`) ?? 0) + 1);
    if (status >= 500 && fiveXX.length < 20) fiveXX.push(`${op} → ${status} ${body.slice(0, 300)}`);
  };
  const call = async (op: string, method: 'GET' | 'POST' | 'PATCH', path: string, auth: string, body?: unknown): Promise<{ status: number; json: any }> => {
    const res = await request(gw.url + path, {
      method,
      dispatcher,
      headers: { authorization: `Bearer ${auth}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.body.text();
    count(op, res.statusCode, text);
    let json: any = null;
    try {
      json = JSON.parse(text);
    } catch {
      /* a stream, or not JSON */
    }
    return { status: res.statusCode, json };
  };

  const orgs: Org[] = [];
  for (let i = 0; i < ORGS; i++) {
    const created = await call('org create', 'POST', '/console/v1/organizations', ADMIN_TOKEN, { name: `load ${i}`, balance: '2.00' });
    t.equal(created.status, 201);
    const key = await call('key create', 'POST', `/console/v1/organizations/${created.json.id}/keys`, ADMIN_TOKEN, { name: 'first' });
    orgs.push({ id: created.json.id, credited: parseMoney('2.00')!, keys: [{ id: key.json.id, secret: key.json.secret }] });
  }

  const pick = <T>(list: T[]): T => list[Math.floor(Math.random() * list.length)];
  let chats = 0;
  const ops: Array<[number, (org: Org) => Promise<void>]> = [
    [
      10,
      async (org) => {
        const key = pick(org.keys);
        const stream = Math.random() < 0.5;
        const words = 1 + Math.floor(Math.random() * 12);
        const r = await call(stream ? 'chat stream' : 'chat', 'POST', '/v1/chat/completions', key.secret, {
          model: 'nw-swift-1',
          messages: [{ role: 'user', content: `load [sim:words=${words}]` }],
          max_tokens: 64,
          stream,
        });
        if (r.status === 200) chats++;
      },
    ],
    [
      2,
      async (org) => {
        const r = await call('key create', 'POST', `/console/v1/organizations/${org.id}/keys`, ADMIN_TOKEN, { name: `k${Date.now()}` });
        if (r.status === 201) org.keys.push({ id: r.json.id, secret: r.json.secret });
      },
    ],
    [
      2,
      async (org) => {
        const key = pick(org.keys);
        const shown = await call('key show', 'GET', `/console/v1/keys/${key.id}`, ADMIN_TOKEN);
        if (shown.status === 200 && shown.json.status === 'live') {
          await call('key edit', 'PATCH', `/console/v1/keys/${key.id}`, ADMIN_TOKEN, { version: shown.json.version, name: `edited ${Date.now()}` });
        }
      },
    ],
    [
      1,
      async (org) => {
        if (org.keys.length < 3) return;
        const key = org.keys.splice(Math.floor(Math.random() * org.keys.length), 1)[0];
        await call('key revoke', 'POST', `/console/v1/keys/${key.id}/revoke`, ADMIN_TOKEN);
      },
    ],
    [
      2,
      async (org) => {
        const cents = 1 + Math.floor(Math.random() * 50);
        const amount = `0.${String(cents).padStart(2, '0')}`;
        const r = await call('credit', 'POST', `/console/v1/organizations/${org.id}/credits`, ADMIN_TOKEN, { amount, target: 'balance' });
        if (r.status === 201) org.credited += parseMoney(amount)!;
      },
    ],
    [2, async (org) => void (await call('usage', 'GET', `/console/v1/organizations/${org.id}/usage`, ADMIN_TOKEN))],
    [1, async (org) => void (await call('org show', 'GET', `/console/v1/organizations/${org.id}`, ADMIN_TOKEN))],
  ];
  const weights = ops.reduce((s, [w]) => s + w, 0);
  const choose = (): ((org: Org) => Promise<void>) => {
    let r = Math.random() * weights;
    for (const [w, fn] of ops) if ((r -= w) < 0) return fn;
    return ops[0][1];
  };

  const transport: string[] = [];
  const until = Date.now() + DURATION_MS;
  await Promise.all(
    Array.from({ length: CALLERS }, async () => {
      while (Date.now() < until) {
        await choose()(pick(orgs)).catch((err: Error) => transport.push(err.message));
      }
    }),
  );
  t.comment([...statuses].sort().map(([k, n]) => `${k}: ${n}`).join(', '));
  t.same(fiveXX, [], 'no 5xx answer');
  t.same(transport, [], 'no transport error');
  t.ok(chats > 100, `${chats} chat calls answered 200`);

  // The live view (from the ledger actors; the last settlements leave the workers just after their answers) and, after a clean stop, the store itself.
  await new Promise((r) => setTimeout(r, 500));
  const live = new Map<string, number>();
  for (const org of orgs) live.set(org.id, parseMoney((await call('org show', 'GET', `/console/v1/organizations/${org.id}`, ADMIN_TOKEN)).json.balance)!);
  t.equal(await gw.stop(), 0, 'SIGTERM exits 0');

  const problems = gw.logs.filter((l) => typeof l.level === 'number' && l.level >= 40);
  t.same(problems.map((l) => `${l.role}: ${l.msg} ${l.err ?? ''}`), [], 'no warning or error in the gateway log');
  const pgLog = readFileSync(join(dataDir, 'postgres.log'), 'utf8').slice(logStart);
  t.same(pgLog.split('\n').filter((l) => /\b(ERROR|PANIC)\b/.test(l)), [], 'no ERROR in the server log');

  const store = await openEmbeddedStore(dataDir, { maxConnections: 8 });
  const pool = createPool(store.url, 1);
  try {
    for (const org of orgs) {
      const { rows } = await pool.query(
        `SELECT o.balance_micros,
                (SELECT coalesce(sum(charged_micros), 0) FROM usage_records u WHERE u.org_id = o.id) AS usage,
                (SELECT count(*) FROM usage_records u WHERE u.org_id = o.id AND charged_micros > 0) AS charged_rows
         FROM organization_money o WHERE o.id = $1`,
        [org.id],
      );
      const { balance_micros: balance, usage, charged_rows: charged } = rows[0];
      t.equal(balance, org.credited - usage, `org ${org.id.slice(0, 8)}: balance ${balance} = credits ${org.credited} − usage ${usage} (${charged} charged calls)`);
      t.equal(live.get(org.id), balance, 'the running ledger agreed with the store');
    }
  } finally {
    await pool.end();
    await store.close();
  }
});
