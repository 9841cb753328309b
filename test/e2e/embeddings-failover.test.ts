// Embeddings replies are read and decoded in a pool thread (workers/fetch-reply.ts),
// yet the failover decision stays with the worker (issue 33 item 1): a 2xx
// whose body is not an embeddings reply, found in the thread before anything
// reached the client, moves the call to the next route, which answers it;
// billed once, as served there, nothing held. nw-embed-1 is given a second
// route (sim-beta) for this test.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { applyCatalog } from '../../src/catalog/apply.js';
import { CredentialPolicy } from '../../src/catalog/credentials.js';
import { packageRoot } from '../../src/config/paths.js';
import { startSimulator } from '../../src/simulator/index.js';
import { createPool, inTransaction } from '../../src/store/pool.js';
import { startGateway } from '../helpers/gateway.js';
import { ADMIN_TOKEN, organization, provision, usageRowsAtLeast } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';
import { startFaultSupplier } from '../reliability/lib/fault-supplier.js';

const db = await testDatabase(t);
if (db !== null) {
  const sim = await startSimulator({ instances: ['alpha', 'beta', 'gamma'] });
  // Between the gateway and the simulator: breaks the exchanges a [fault:…] directive names.
  const faults = await startFaultSupplier(sim.url);
  const gw = await startGateway({ env: { DATABASE_URL: db, SIMULATOR_URL: faults.url, ADMIN_TOKEN, BILLING_FLUSH_MS: '0' } });
  const pool = createPool(db, 2);
  t.teardown(async () => {
    await gw.stop();
    await faults.close();
    await sim.close();
    await pool.end();
  });
  const seed = JSON.parse(readFileSync(join(packageRoot, 'config/catalog.seed.json'), 'utf8'));
  const embed = seed.models.find((m: any) => m.canonical_name === 'nw-embed-1');
  embed.routes.push({ supplier: 'sim-beta', protocol_code: 'embeddings', upstream_model: 'embed-1', priority: 20 });
  await inTransaction(pool, (c) => applyCatalog(c, { models: [embed] }, 'test: a second embeddings route', new CredentialPolicy([])));

  const post = (key: string, input: string) =>
    fetch(`${gw.url}/v1/embeddings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'nw-embed-1', input: [input], encoding_format: 'base64' }),
    });

  for (const fault of ['[fault:notjson@alpha]', '[fault:errorbody@alpha]']) {
    t.test(`${fault}: the 200 read in the thread is unusable, beta answers, billed once`, async (t) => {
      const { key, orgId } = await provision(gw.url);
      // The worker's catalog takes the new revision within its refresh: until then alpha is the only route (a 502).
      let res = await post(key, `failover ${fault} [sim:floats]`);
      for (let i = 0; i < 50 && res.status !== 200; i++) {
        await new Promise((r) => setTimeout(r, 100));
        res = await post(key, `failover ${fault} [sim:floats]`);
      }
      t.equal(res.status, 200, res.status === 200 ? 'answered' : `answered: ${await res.clone().text()}`);
      const body = (await res.json()) as any;
      t.equal(body.data.length, 1);
      t.equal(Buffer.from(body.data[0].embedding, 'base64').byteLength, 1536 * 4, 'the vector, as base64 of float32');
      const rows = (await usageRowsAtLeast(gw.url, orgId, 1)).filter((r: any) => r.outcome === 'completed');
      t.same(rows.map((r: any) => r.supplier), ['sim-beta'], 'one completed row, served by beta');
      t.equal((await organization(gw.url, orgId)).held, '0.00', 'nothing held');
      t.ok((faults.injected.get(fault.slice(7, -7)) ?? 0) > 0, 'alpha was broken');
    });
  }
}
