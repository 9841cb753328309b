// Issue 12 item 10: money is exact. Amounts, balances and packages stay at or
// below 2^53 − 1 micros (MAX_MONEY), parsed from the decimal with BigInt; a
// credit past the maximum, or one that would take a balance or package past
// it, is refused by name with nothing changed; an int8 the store hands back
// that a number cannot hold exactly fails its query instead of rounding.
// Real gateway, real PostgreSQL, over HTTP, and the `tollgate credit` command.
import t from 'tap';
import { request } from 'undici';
import { formatMoney, MAX_MICROS, MAX_MONEY, moneyTooLarge, parseMoney } from '../../src/money/money.js';
import { runCli } from '../../src/console/cli/main.js';
import { createPool } from '../../src/store/pool.js';
import { startGateway } from '../helpers/gateway.js';
import { ADMIN_TOKEN } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';

const db = await testDatabase(t);

if (db !== null) {
  const gw = await startGateway({ env: { DATABASE_URL: db, ADMIN_TOKEN }, workers: 1 });
  t.teardown(() => gw.stop());
  const call = async (method: 'GET' | 'POST', path: string, body?: unknown) => {
    const res = await request(`${gw.url}/console/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.statusCode, json: (await res.body.json()) as any };
  };
  const pool = createPool(db, 1);
  t.teardown(() => pool.end());
  const stored = async (orgId: string) => {
    const { rows } = await pool.query(
      `SELECT balance_micros::text AS b, package_micros::text AS p, (SELECT count(*)::int FROM ledger_entries WHERE org_id = $1) AS entries
       FROM organization_money WHERE id = $1`,
      [orgId],
    );
    return rows[0] as { b: string; p: string; entries: number };
  };

  t.test('issue 12 item 10: the int8 parser refuses a value a number cannot hold exactly', async (t) => {
    const pool = createPool(db, 1);
    t.teardown(() => pool.end());
    t.same((await pool.query('SELECT 9007199254740991::bigint AS x')).rows, [{ x: MAX_MICROS }]);
    t.same((await pool.query('SELECT -9007199254740991::bigint AS x')).rows, [{ x: -MAX_MICROS }]);
    await t.rejects(pool.query('SELECT 9007199254740993::bigint AS x'), /not exact/, 'an error, not 9007199254740992');
    t.same((await pool.query('SELECT 1::bigint AS x')).rows, [{ x: 1 }], 'the connection still serves');
  });

  t.test('issue 12 item 10: credit to the maximum reads back exactly; one micro more is refused by name, nothing changed', async (t) => {
    const org = (await call('POST', '/organizations', { name: 'near the limit', balance: '1.00' })).json;
    const near = await call('POST', `/organizations/${org.id}/credits`, { amount: '9007199253.740990' });
    t.equal(near.status, 201);
    t.equal(near.json.organization.balance, '9007199254.74099', 'one micro below the maximum, exactly');
    const top = await call('POST', `/organizations/${org.id}/credits`, { amount: '0.000001' });
    t.equal(top.status, 201);
    t.equal(top.json.organization.balance, MAX_MONEY, 'the maximum, exactly');
    t.equal((await call('GET', `/organizations/${org.id}`)).json.available, MAX_MONEY);
    const before = await stored(org.id);
    t.same(before, { b: String(MAX_MICROS), p: '0', entries: 3 }, 'the store holds the exact figure');

    const over = await call('POST', `/organizations/${org.id}/credits`, { amount: '0.000001' });
    t.equal(over.status, 409);
    t.equal(over.json.error.code, 'money_limit_exceeded');
    t.same(await stored(org.id), before, 'no entry, no balance change');
    t.equal((await call('GET', `/organizations/${org.id}`)).json.balance, MAX_MONEY, 'the actor unchanged');

    // The package is held to the same maximum.
    t.equal((await call('POST', `/organizations/${org.id}/credits`, { amount: MAX_MONEY, target: 'package' })).status, 201);
    const pkgOver = await call('POST', `/organizations/${org.id}/credits`, { amount: '0.000001', target: 'package' });
    t.equal(pkgOver.status, 409);
    t.equal(pkgOver.json.error.code, 'money_limit_exceeded');
    t.equal((await stored(org.id)).p, String(MAX_MICROS));
  });

  t.test('issue 12 item 10: an amount above the maximum is refused by name, not rounded', async (t) => {
    const org = (await call('POST', '/organizations', { name: 'huge credit' })).json;
    const huge = await call('POST', `/organizations/${org.id}/credits`, { amount: '9007199254.740993' });
    t.equal(huge.status, 400);
    t.same(huge.json.error.field_details, [{ field: 'amount', issue: `must be at most ${MAX_MONEY}` }]);
    const opening = await call('POST', '/organizations', { name: 'huge opening', balance: '999999999999.999999' });
    t.equal(opening.status, 400);
    t.same(opening.json.error.field_details, [{ field: 'balance', issue: `must be at most ${MAX_MONEY}` }]);
    t.same(await stored(org.id), { b: '0', p: '0', entries: 0 });
  });

  t.test('issue 12 item 10: `tollgate credit` and a stale actor are held to the same maximum', async (t) => {
    const org = (await call('POST', '/organizations', { name: 'shell credits', balance: '1.00' })).json;
    const out: string[] = [];
    const err: string[] = [];
    const io = { out: (s: string) => void out.push(s), err: (s: string) => void err.push(s) };
    const env = { DATABASE_URL: db, LOG_LEVEL: 'silent' };
    t.equal(await runCli(['credit', org.id, '--amount', '9007199253.740991'], io, env), 0, err.join(''));
    t.equal((await stored(org.id)).b, String(MAX_MICROS));
    t.equal(await runCli(['credit', org.id, '--amount', '0.000001'], io, env), 1);
    t.match(err.join(''), /money_limit_exceeded/);
    // The running actor may not have re-read the row yet: the store's CHECK refuses what its memory would allow.
    const racing = await call('POST', `/organizations/${org.id}/credits`, { amount: '5.00' });
    t.equal(racing.status, 409);
    t.equal(racing.json.error.code, 'money_limit_exceeded');
    t.equal((await stored(org.id)).b, String(MAX_MICROS), 'nothing credited past the maximum');
    t.equal((await call('GET', `/organizations/${org.id}`)).json.balance, MAX_MONEY, 'and the actor took the store’s figure');
  });
}

t.test('issue 12 item 10: decimals parse exactly; above the maximum is refused, not rounded', async (t) => {
  t.equal(parseMoney(MAX_MONEY), MAX_MICROS);
  t.equal(formatMoney(MAX_MICROS), MAX_MONEY);
  t.equal(parseMoney('9007199254.740990'), MAX_MICROS - 1);
  t.equal(parseMoney('9007199254.740992'), null, 'one micro past the maximum');
  t.equal(parseMoney('9007199254.740993'), null, 'would round to ...992 as a double');
  t.equal(parseMoney('999999999999.999999'), null);
  t.ok(moneyTooLarge('9007199254.740992') && !moneyTooLarge(MAX_MONEY) && !moneyTooLarge('abc'), 'too large is told apart from malformed');
  t.equal(formatMoney(12345678901234567890n), '12345678901234.56789', 'totals format exactly as bigint');
  t.equal(formatMoney(-1_500_000), '-1.50');
});
