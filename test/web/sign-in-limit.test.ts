// The sign-in limit on a real PostgreSQL (web/sign-in-limit.ts): a try is
// counted before it is checked, atomically across pools (two pools stand for
// two workers or instances), per account and address together, and a right
// credential's try stops counting.
import t from 'tap';
import { migrate } from '../../src/store/migrate.js';
import { createPool, type Pool } from '../../src/store/pool.js';
import { ADDRESS_FACTOR, beginAttempt, countAttempt, forgive } from '../../src/web/sign-in-limit.js';
import { testDatabase } from '../helpers/services.js';

const limit = { maxFailures: 5, windowMs: 60_000 };
let pools: Pool[] = [];

t.before(async () => {
  const url = await testDatabase(t);
  if (url === null) return;
  pools = [createPool(url, 8), createPool(url, 8)];
  await migrate(pools[0]);
});
t.teardown(async () => {
  for (const p of pools) await p.end();
});

t.test('issue 30 item 1: of 60 concurrent tries over two pools, exactly the limit are let through', async (t) => {
  // countAttempt: no in-process queue, so 16 connections race for real and only the advisory lock keeps the count.
  const raced = await Promise.all(Array.from({ length: 60 }, (_, i) => countAttempt(pools[i % 2], limit, '198.51.100.1', 'a@x.test')));
  t.equal(raced.filter((a) => a !== null).length, limit.maxFailures, 'the lock alone');
  const queued = await Promise.all(Array.from({ length: 60 }, (_, i) => beginAttempt(pools[i % 2], limit, '198.51.100.5', 'a@x.test')));
  t.equal(queued.filter((a) => a !== null).length, limit.maxFailures, 'with the per-worker queue');
});

t.test('issue 30 item 6: buckets are account and address together; an address alone gets 4 times the limit', async (t) => {
  for (let i = 0; i < limit.maxFailures; i++) t.not(await beginAttempt(pools[0], limit, '198.51.100.2', 'b@x.test'), null);
  t.equal(await beginAttempt(pools[1], limit, '198.51.100.2', 'B@x.test'), null, 'the pair is full (emails compare case-insensitively)');
  t.not(await beginAttempt(pools[1], limit, '198.51.100.3', 'b@x.test'), null, 'the account from another address is not');
  t.not(await beginAttempt(pools[1], limit, '198.51.100.2', null), null, 'the admin token from that address is its own pair');
  let admitted = limit.maxFailures + 1;
  for (let i = 0; i < 40; i++) if ((await beginAttempt(pools[0], limit, '198.51.100.2', `c${i}@x.test`)) !== null) admitted++;
  t.equal(admitted, limit.maxFailures * ADDRESS_FACTOR, 'one address over many accounts stops at the address bucket');
});

t.test('a try whose credential was right is forgiven', async (t) => {
  for (let i = 0; i < limit.maxFailures - 1; i++) await beginAttempt(pools[0], limit, '198.51.100.4', 'd@x.test');
  for (let i = 0; i < 3; i++) {
    const a = await beginAttempt(pools[0], limit, '198.51.100.4', 'd@x.test');
    t.not(a, null, `right try ${i + 1} is let through`);
    await forgive(pools[0], a!);
  }
  t.not(await beginAttempt(pools[0], limit, '198.51.100.4', 'd@x.test'), null, 'the last failure still fits');
  t.equal(await beginAttempt(pools[0], limit, '198.51.100.4', 'd@x.test'), null, 'and then the pair is full');
});
