// The tests' reading of console money (test/helpers/money.ts). The old
// pattern `parseMoney(x)! >= 0` could not fail: parseMoney returns null for a
// negative amount and `null >= 0` is true. A never-negative assertion must
// see a negative balance as negative.
import t from 'tap';
import { formatMoney } from '../../src/money/money.js';
import { micros } from '../helpers/money.js';

t.test('issue 12 item 12: a negative balance reads back negative, so "never negative" can fail', async (t) => {
  t.equal(micros('-0.50'), -500_000);
  t.equal(micros(formatMoney(-125)), -125, 'what the console writes for a balance one sub-cent below zero');
  t.notOk(micros(formatMoney(-1)) >= 0, 'the never-negative assertion fails on it');
  t.equal(micros('12.345678'), 12_345_678);
  t.equal(micros('0.00'), 0);
  for (const bad of [null, undefined, '', 'abc', '1.2345678', '--1', '1e3', 12]) {
    t.throws(() => micros(bad), `refuses ${JSON.stringify(bad)} rather than reading it as null`);
  }
});
