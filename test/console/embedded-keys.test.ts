// The embedded default (no DATABASE_URL, no ADMIN_TOKEN), two workers: the
// first start creates a demo organization and key and prints the key once;
// the console API is absent; the `tollgate` command works on the running
// gateway's PostgreSQL, its edits reaching both workers within a second
// (NOTIFY, with the change log as the fallback); with the gateway stopped it
// starts the data directory's server itself for its own duration.
import { existsSync, rmSync } from 'node:fs';
import t from 'tap';
import { startGateway, tempDir } from '../helpers/gateway.js';
import { bearer, call, sleep, tollgate } from './keys-helpers.js';

const dataDir = tempDir('tollgate-keys-embedded-');
const env = { DATA_DIR: dataDir };
t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));

let demo: { orgId: string; secret: string };

t.test('first start: demo organization and key, the key printed once', async (t) => {
  const gw = await startGateway({ dataDir, workers: 2 });
  try {
    const out = gw.output();
    const keys = out.match(/tg_sk_[0-9A-Za-z]{43}/g) ?? [];
    t.equal(keys.length, 1, 'one key, printed once');
    t.match(out, /will not be shown again/);
    const orgId = /demo organization ([0-9a-f-]{36}) with a balance of 25\.00/.exec(out)?.[1];
    t.ok(orgId, 'the banner names the organization and its balance');
    demo = { orgId: orgId!, secret: keys[0]! };
    t.notOk(gw.logs.some((l) => l.msg !== undefined && JSON.stringify(l).includes(demo.secret)), 'printed, never logged');

    const echo = await call(gw.url, 'GET', '/v1/key', bearer(demo.secret));
    t.equal(echo.status, 200);
    t.match(echo.json, { organization_id: demo.orgId, scope: 'unrestricted', binding: 'organization', funding: 'balance' });

    for (const [method, path] of [['GET', `/console/v1/organizations/${demo.orgId}/keys`], ['POST', '/console/v1/keys/x/revoke'], ['PATCH', '/console/v1/keys/x']]) {
      const r = await call(gw.url, method, path, { authorization: 'Bearer anything-at-all-here' }, method === 'GET' ? undefined : {});
      t.equal(r.status, 404, `no ADMIN_TOKEN: ${method} ${path} is a 404`);
    }

    const shown = await tollgate(['orgs', 'show', demo.orgId, '--json'], env);
    t.equal(shown.code, 0, shown.stderr);
    t.match(JSON.parse(shown.stdout), { name: 'Demo organization', balance: '25.00' });
  } finally {
    t.equal(await gw.stop(), 0);
  }
});

t.test('the CLI on a running embedded gateway: its edits reach both workers within 1 s', async (t) => {
  const gw = await startGateway({ dataDir, workers: 2 });
  try {
    t.notOk(/tg_sk_[0-9A-Za-z]{43}/.test(gw.output()), 'a later start prints no key');
    t.equal((await call(gw.url, 'GET', '/v1/key', bearer(demo.secret))).status, 200, 'the demo key persists');

    const created = await tollgate(['keys', 'create', demo.orgId, '--name', 'from the shell', '--json'], env);
    t.equal(created.code, 0, created.stderr);
    const key = JSON.parse(created.stdout);
    const createdAt = Date.parse(key.created_at);
    let usableAt = 0;
    for (let i = 0; i < 300 && usableAt === 0; i++) {
      if ((await call(gw.url, 'GET', '/v1/key', bearer(key.secret))).status === 200) usableAt = Date.now();
      else await sleep(5);
    }
    t.ok(usableAt > 0 && usableAt - createdAt < 1000, `usable ${usableAt - createdAt} ms after its creation (CLI start-up included)`);

    // Warm the key on both workers, then revoke it from the shell while requests keep coming.
    const pids = new Set<number>();
    for (let i = 0; i < 400 && pids.size < 2; i++) {
      const r = await call(gw.url, 'GET', '/v1/key', bearer(key.secret));
      if (r.status === 200) pids.add((await gw.waitForLog((l) => l.msg === 'request' && l.rid === r.headers['x-request-id'])).pid);
    }
    t.equal(pids.size, 2, 'both workers hold the key warm');
    const seen: Array<{ sentAt: number; status: number; rid: string }> = [];
    let cliDone = 0;
    const revoking = tollgate(['keys', 'revoke', key.id, '--json'], env).then((r) => ((cliDone = Date.now()), r));
    await Promise.all(
      Array.from({ length: 3 }, async () => {
        while (cliDone === 0 || Date.now() - cliDone < 1500) {
          const sentAt = Date.now();
          const r = await call(gw.url, 'GET', '/v1/key', bearer(key.secret));
          seen.push({ sentAt, status: r.status, rid: r.headers['x-request-id'] });
        }
      }),
    );
    const revoked = await revoking;
    t.equal(revoked.code, 0, revoked.stderr);
    const revokedAt = Date.parse(JSON.parse(revoked.stdout).revoked_at);
    const byWorker = new Map<number, typeof seen>();
    for (const s of seen) {
      const pid = (await gw.waitForLog((l) => l.msg === 'request' && l.rid === s.rid)).pid;
      byWorker.set(pid, [...(byWorker.get(pid) ?? []), s]);
    }
    for (const [pid, list] of byWorker) {
      const late = list.filter((s) => s.status === 200 && s.sentAt > revokedAt + 1000);
      const firstRefusal = list.find((s) => s.status === 401);
      t.same(late, [], `worker ${pid}: no acceptance later than 1 s after the revocation`);
      t.ok(firstRefusal !== undefined && firstRefusal.sentAt - revokedAt < 1000, `worker ${pid}: refusing ${firstRefusal ? firstRefusal.sentAt - revokedAt : '?'} ms after the revocation`);
    }
    t.equal(byWorker.size, 2, 'both workers were asked');
  } finally {
    t.equal(await gw.stop(), 0);
  }
});

t.test('with no gateway running, the CLI starts the data directory\'s server itself', async (t) => {
  const elsewhere = `${dataDir}-missing`;
  const refused = await tollgate(['keys', 'list', demo.orgId], { DATA_DIR: elsewhere });
  t.equal(refused.code, 1);
  t.match(refused.stderr, /no store found/, 'a directory with no store is refused, not created empty');
  t.notOk(existsSync(elsewhere));
  const list = await tollgate(['keys', 'list', demo.orgId, '--json'], env);
  t.equal(list.code, 0, list.stderr);
  const statuses = JSON.parse(list.stdout).data.map((k: any) => `${k.name}:${k.status}`).sort();
  t.same(statuses, ['Demo key:live', 'from the shell:revoked']);
  const gw = await startGateway({ dataDir, workers: 2 });
  t.equal((await call(gw.url, 'GET', '/v1/key', bearer(demo.secret))).status, 200, 'and lets go of it: the gateway starts after');
  t.equal(await gw.stop(), 0);
});
