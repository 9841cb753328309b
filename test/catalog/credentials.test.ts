// A catalog may only name credential variables the gateway allows
// (TOLLGATE_SUPPLIER_* or suppliers.credential_env_allow): otherwise a catalog
// file could send ADMIN_TOKEN or DATABASE_URL as the bearer to a base_url of
// its choosing. `tollgate catalog apply` refuses such a file by name, and a
// running gateway whose store already holds one sends nothing to that supplier.
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import pg from 'pg';
import t from 'tap';
import { tollgate } from '../console/keys-helpers.js';
import { startGateway } from '../helpers/gateway.js';
import { ADMIN_TOKEN, provision } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';

const SUPPLIER_SECRET = 'sk-evil-supplier-credential';

const db = await testDatabase(t);
if (db !== null) {
  // The "supplier" a hostile catalog points at: records what it is sent, answers like a chat supplier.
  const seen: IncomingHttpHeaders[] = [];
  const capture = createServer((req, res) => {
    seen.push(req.headers);
    req.resume();
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({
        id: 'x', object: 'chat.completion', created: 1, model: 'up',
        choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
      }));
    });
  });
  capture.listen(0, '127.0.0.1');
  await once(capture, 'listening');
  const captureUrl = `http://127.0.0.1:${(capture.address() as AddressInfo).port}`;
  const gw = await startGateway({ env: { DATABASE_URL: db, ADMIN_TOKEN, CATALOG_REFRESH_MS: '200', TOLLGATE_SUPPLIER_EVIL: SUPPLIER_SECRET } });
  const pool = new pg.Pool({ connectionString: db, max: 1 });
  t.teardown(async () => {
    await gw.stop();
    await pool.end();
    capture.close();
  });
  const dir = t.testdir({});
  const file = (name: string, content: unknown): string => {
    const path = join(dir, name);
    writeFileSync(path, JSON.stringify(content));
    return path;
  };
  const catalog = (credentialEnv: string | null, supplier = 'evil') => ({
    vendors: [{ code: 'evil', display_name_en: 'Evil', display_name_ru: 'Evil' }],
    suppliers: [{ name: supplier, wire_protocol: 'openai-compatible', base_url: `${captureUrl}/v1`, credential_env: credentialEnv, protocols: ['chat_completions'] }],
    models: [{
      vendor: 'evil', canonical_name: 'evil-chat-1', display_name_en: 'E', display_name_ru: 'E', description_en: 'e', description_ru: 'e',
      banner_seed: 1, modality_codes: ['text_generation'],
      capabilities: [{ protocol_code: 'chat_completions', modality_code: 'text_generation' }],
      routes: [{ supplier, protocol_code: 'chat_completions', upstream_model: 'up' }],
      price: { input_micros_per_mtok: 1000, output_micros_per_mtok: 1000 },
    }],
  });
  const revision = async (): Promise<number> => ((await (await fetch(`${gw.url}/v1/models`)).json()) as any).catalog_revision;
  const until = async (pred: () => Promise<boolean>): Promise<void> => {
    for (let i = 0; i < 50; i++) {
      if (await pred()) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error('the gateway did not load the new revision');
  };
  const call = async (key: string): Promise<Response> =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'evil-chat-1', messages: [{ role: 'user', content: 'hi' }], max_tokens: 16 }),
    });

  t.test('issue 12 item 9: catalog apply refuses a credential_env outside TOLLGATE_SUPPLIER_* and the allow-list, by name', async (t) => {
    const before = await revision();
    for (const name of ['ADMIN_TOKEN', 'DATABASE_URL', 'REDIS_URL', 'HOME', 'OPENAI_API_KEY', 'TOLLGATE_SUPPLIER_']) {
      const r = await tollgate(['catalog', 'apply', file(`${name}.json`, catalog(name))], { DATABASE_URL: db });
      t.equal(r.code, 1, `${name}: refused`);
      t.match(r.stderr, `supplier evil: credential_env ${name} is refused`, `${name}: the refusal names the variable`);
    }
    const { rows } = await pool.query("SELECT count(*)::int AS n FROM suppliers WHERE name = 'evil'");
    t.equal(rows[0].n, 0, 'nothing was written');
    t.equal(await revision(), before, 'no revision published');
  });

  t.test('issue 12 item 9: the allow-list setting admits a named variable, never one of the gateway\'s own settings', async (t) => {
    const config = join(dir, 'allow.json');
    writeFileSync(config, JSON.stringify({ suppliers: { credential_env_allow: ['OPENAI_API_KEY', 'ADMIN_TOKEN'] } }));
    const own = await tollgate(['catalog', 'apply', file('own.json', catalog('ADMIN_TOKEN'))], { DATABASE_URL: db, TOLLGATE_CONFIG: config });
    t.equal(own.code, 1, 'ADMIN_TOKEN stays refused even when listed');
    t.match(own.stderr, /credential_env ADMIN_TOKEN is refused: it is one of the gateway's own settings/);
    const listed = await tollgate(['catalog', 'apply', file('listed.json', catalog('OPENAI_API_KEY', 'listed'))], { DATABASE_URL: db, TOLLGATE_CONFIG: config });
    t.equal(listed.code, 0, listed.stderr);
    const prefixed = await tollgate(['catalog', 'apply', file('prefixed.json', catalog('TOLLGATE_SUPPLIER_EVIL'))], { DATABASE_URL: db });
    t.equal(prefixed.code, 0, `a TOLLGATE_SUPPLIER_ name needs no listing: ${prefixed.stderr}`);
  });

  t.test('issue 12 item 9: a stored catalog naming ADMIN_TOKEN sends nothing to its supplier', async (t) => {
    // The catalog applied above routes evil-chat-1 to the capture server with TOLLGATE_SUPPLIER_EVIL.
    const { key } = await provision(gw.url);
    const first = await revision();
    await until(async () => (await revision()) === first && (await call(key)).status === 200);
    t.equal(seen.at(-1)?.authorization, `Bearer ${SUPPLIER_SECRET}`, 'an allowed credential is sent (the capture works)');

    // A catalog written to the store before the rule (or by hand): the runtime refuses it too.
    await pool.query("UPDATE suppliers SET credential_env = 'ADMIN_TOKEN' WHERE name = 'evil'");
    const { rows } = await pool.query("INSERT INTO catalog_revisions (note) VALUES ('hostile edit') RETURNING revision");
    await until(async () => (await revision()) === rows[0].revision);
    const count = seen.length;
    const res = await call(key);
    t.equal(res.status, 502, 'the call fails: its only route is skipped');
    t.equal(((await res.json()) as any).error.code, 'upstream_error');
    t.equal(seen.length, count, 'the supplier received no request at all');
    t.notOk(seen.some((h) => JSON.stringify(h).includes(ADMIN_TOKEN)), 'the admin token never left the gateway');
    // Log lines go through an asynchronous destination: the line may reach the test after the answer.
    const refusal = await gw.waitForLog((l) => typeof l.msg === 'string' && l.msg.includes('credential_env ADMIN_TOKEN is refused'), 5000).catch(() => null);
    t.ok(refusal, 'the refusal is logged by name');
    t.notOk(gw.output().includes(ADMIN_TOKEN), 'nor was it logged');
  });
}
