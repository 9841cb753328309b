// typical_request in GET /v1/models: the average spend of one completed
// request, computed from usage rows and published as a catalog revision.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { micros } from '../helpers/money.js';
import { startGateway } from '../helpers/gateway.js';
import { ADMIN_TOKEN, provision, usageRows } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';

const db = await testDatabase(t);
if (db !== null) {
  const override = join(t.testdir({}), 'fast-typical.json');
  writeFileSync(override, JSON.stringify({ catalog: { typical_refresh_ms: 300 } }));
  const gw = await startGateway({ env: { DATABASE_URL: db, ADMIN_TOKEN, TOLLGATE_CONFIG: override } });
  t.teardown(() => gw.stop());

  t.test('average of completed requests only, per model', async (t) => {
    const before: any = await (await fetch(`${gw.url}/v1/models`)).json();
    t.notOk(before.data.some((m: any) => 'typical_request' in m), 'no traffic, no typical request');

    const { key, orgId } = await provision(gw.url);
    const call = (content: string) =>
      fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'nw-swift-1', messages: [{ role: 'user', content }] }),
      }).then((r) => r.arrayBuffer());
    await call('[sim:words=4]');
    await call('[sim:words=40]');
    await call('[sim:words=400]');
    await call('[sim:status=503]'); // failed: not a finished request, not averaged
    let rows: any[] = [];
    for (let i = 0; i < 30 && rows.length < 4; i++) {
      rows = await usageRows(gw.url, orgId);
      await new Promise((r) => setTimeout(r, 100));
    }
    const completed = rows.filter((r) => r.outcome === 'completed');
    t.equal(completed.length, 3);
    const mean = Math.round(completed.reduce((s, r) => s + micros(r.charged), 0) / 3);
    const meanOut = Math.round(completed.reduce((s, r) => s + r.output_tokens, 0) / 3);

    // The refresh (every 300 ms here) may publish before every worker's rows are in the store (each writes its own,
    // every flush_ms): a first revision may average fewer requests. What is published once all three are in counts.
    let swift: any;
    for (let i = 0; i < 50 && swift?.typical_request?.requests !== 3; i++) {
      await new Promise((r) => setTimeout(r, 100));
      swift = ((await (await fetch(`${gw.url}/v1/models`)).json()) as any).data.find((m: any) => m.id === 'nw-swift-1');
    }
    t.ok(swift.typical_request, 'published');
    t.equal(swift.typical_request.requests, 3);
    t.equal(micros(swift.typical_request.average_spend), mean, 'average spend, to the micro');
    t.equal(swift.typical_request.average_output_tokens, meanOut);
    t.equal(swift.typical_request.window_days, 30);
    const list: any = await (await fetch(`${gw.url}/v1/models`)).json();
    t.ok(list.catalog_revision > before.catalog_revision, 'a new revision was published');
    const revision = list.catalog_revision;
    await new Promise((r) => setTimeout(r, 1000));
    t.equal(((await (await fetch(`${gw.url}/v1/models`)).json()) as any).catalog_revision, revision, 'no new revision while nothing changed');
  });
}
