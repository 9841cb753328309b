// The response-ownership table and its per-worker cache, on a real
// PostgreSQL: ids are written in batches (one statement per interval, not
// one per call), a hit asks nothing, a miss asks once and fills the cache,
// every "no" takes the same path, and the cache is bounded in entries and in age.
import t from 'tap';
import { migrate } from '../../../src/store/migrate.js';
import { createPool } from '../../../src/store/pool.js';
import { ResponseOwnership, type Queryable } from '../../../src/surfaces/responses/ownership.js';
import { testDatabase } from '../../helpers/services.js';

const ORG_A = '00000000-0000-4000-8000-00000000000a';
const ORG_B = '00000000-0000-4000-8000-00000000000b';

const db = await testDatabase(t);
if (db !== null) {
  const pool = createPool(db, 4);
  t.teardown(() => pool.end());
  await migrate(pool);
  /** The real pool, with the statements it was sent written down. */
  const sent: string[] = [];
  const store: Queryable = { query: (sql, params) => (sent.push(sql.split(' ')[0]!), pool.query(sql, params)) };
  const opts = { maxEntries: 1000, maxAgeMs: 60_000, flushMs: 20 };

  t.test('a hundred completions are written in one statement; the row is an id and an organization', async (t) => {
    const owners = new ResponseOwnership(store, opts);
    sent.length = 0;
    for (let i = 0; i < 100; i++) owners.record(`resp_batch_${i}`, ORG_A);
    t.same(sent, [], 'nothing written on the call path');
    await new Promise((r) => setTimeout(r, 60));
    t.same(sent, ['INSERT'], 'one INSERT for the batch');
    const { rows } = await pool.query("SELECT count(*)::int AS n FROM response_owners WHERE response_id LIKE 'resp_batch_%'");
    t.equal(rows[0].n, 100);
    const cols = await pool.query("SELECT column_name FROM information_schema.columns WHERE table_name = 'response_owners' ORDER BY ordinal_position");
    t.same(cols.rows.map((r) => r.column_name), ['response_id', 'org_id', 'created_at'], 'no content');
    sent.length = 0;
    t.equal(await owners.owns('resp_batch_7', ORG_A), true);
    t.same(sent, [], 'a cached id asks the store nothing');
    owners.record('resp_batch_7', ORG_A);
    await owners.flush();
    t.same(sent, [], 'an id recorded twice (a stream: response.created, then answered) is written once');
    await owners.close();
  });

  t.test('another worker: a miss asks the store once (concurrent misses share it) and fills its cache', async (t) => {
    const a = new ResponseOwnership(store, opts);
    const b = new ResponseOwnership(store, opts);
    a.record('resp_shared', ORG_B);
    await a.close();
    sent.length = 0;
    t.same(await Promise.all([b.owns('resp_shared', ORG_B), b.owns('resp_shared', ORG_B), b.owns('resp_shared', ORG_B)]), [true, true, true]);
    t.same(sent, ['SELECT'], 'one query for three concurrent misses');
    await b.owns('resp_shared', ORG_B);
    t.same(sent, ['SELECT'], 'then cached');
    // Recorded by one worker, asked of another before the batch is written: found after one interval.
    const c = new ResponseOwnership(store, { ...opts, flushMs: 50 });
    c.record('resp_late', ORG_A);
    t.equal(await b.owns('resp_late', ORG_A), true, 'an id not yet written is asked again after one write interval');
    sent.length = 0;
    const at = performance.now();
    t.equal(await b.owns('resp_never', ORG_A), false, 'an unknown id: not owned');
    t.same(sent, ['SELECT', 'SELECT'], 'asked twice, once after the interval');
    t.ok(performance.now() - at >= opts.flushMs + 100 - 5);
    t.equal(await b.owns('resp_never', ORG_A).then(() => sent.length), 4, 'an unknown id is not cached (it may be written later)');
    await c.close();
    await b.close();
  });

  t.test('the cache bounds: past maxEntries the oldest go first; past maxAgeMs an entry is asked again', async (t) => {
    const small = new ResponseOwnership(store, { maxEntries: 3, maxAgeMs: 60_000, flushMs: 5 });
    for (const id of ['resp_b1', 'resp_b2', 'resp_b3', 'resp_b4']) small.record(id, ORG_A);
    await small.close();
    sent.length = 0;
    for (const id of ['resp_b2', 'resp_b3', 'resp_b4']) t.equal(await small.owns(id, ORG_A), true);
    t.same(sent, [], 'the three newest are cached');
    t.equal(await small.owns('resp_b1', ORG_A), true, 'the oldest was evicted, and the store still knows it');
    t.same(sent, ['SELECT']);
    const young = new ResponseOwnership(store, { maxEntries: 10, maxAgeMs: 1000, flushMs: 5 });
    young.record('resp_age', ORG_B);
    await young.close();
    sent.length = 0;
    await young.owns('resp_age', ORG_B);
    t.same(sent, [], 'fresh: cached');
    await new Promise((r) => setTimeout(r, 1050));
    t.equal(await young.owns('resp_age', ORG_B), true);
    t.same(sent, ['SELECT'], 'older than maxAgeMs: asked again');
  });

  t.test('issue 30 item 10: another organization\'s id and an unknown one take one path (the same queries, the same wait)', async (t) => {
    const owners = new ResponseOwnership(store, opts);
    owners.record('resp_theirs', ORG_B);
    await owners.flush();
    const refusal = async (id: string): Promise<{ owns: boolean; queries: string[]; ms: number }> => {
      sent.length = 0;
      const at = performance.now();
      const owns = await owners.owns(id, ORG_A);
      return { owns, queries: [...sent], ms: performance.now() - at };
    };
    // Known to this worker's cache and to the store as ORG_B's, and known to neither: the same answer, the same work.
    const theirs = await refusal('resp_theirs');
    const unknown = await refusal('resp_unknown_10');
    t.same(theirs.queries, ['SELECT', 'SELECT'], 'another organization\'s id: asked of the store, twice, as an unknown one is');
    t.same(unknown.queries, theirs.queries, 'an unknown id: the same queries');
    t.same([theirs.owns, unknown.owns], [false, false]);
    for (const r of [theirs, unknown]) t.ok(r.ms >= opts.flushMs + 100 - 5, `both wait one write interval (${r.ms.toFixed(1)} ms)`);
    t.equal(await owners.owns('resp_theirs', ORG_B), true, 'its owner still gets a yes from the cache');
    t.same(sent, ['SELECT', 'SELECT'], 'with no query');
    await owners.close();
  });

  t.test('a store that cannot be written keeps the rows for the next interval', async (t) => {
    let fail = true;
    const flaky: Queryable = { query: (sql, params) => (fail && sql.startsWith('INSERT') ? Promise.reject(new Error('down')) : pool.query(sql, params)) };
    const owners = new ResponseOwnership(flaky, { ...opts, flushMs: 5 });
    owners.record('resp_retry', ORG_A);
    await owners.flush();
    fail = false;
    await owners.flush();
    const { rows } = await pool.query("SELECT org_id::text AS org FROM response_owners WHERE response_id = 'resp_retry'");
    t.same(rows, [{ org: ORG_A }]);
    await owners.close();
  });
}
