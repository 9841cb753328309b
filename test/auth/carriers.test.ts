// Spec, Authentication rules 1, 3, 4: which header a key is read from. (The
// messages surfaces, the only ones with the x-api-key carrier, are built in
// another issue; their routes pass 'bearer_or_x_api_key' to the same code.)
import t from 'tap';
import { bearerKey, presentedKey } from '../../src/auth/carriers.js';

const A = 'tg_sk_' + 'A'.repeat(43);
const B = 'tg_sk_' + 'B'.repeat(43);

t.test('rule 1: Authorization: Bearer <key> on every authenticated operation', async (t) => {
  t.equal(presentedKey(`Bearer ${A}`, '', 'bearer'), A);
  t.equal(presentedKey(`Bearer ${A}`, '', 'bearer_or_x_api_key'), A);
  t.equal(presentedKey(`bearer ${A}`, '', 'bearer'), A, 'the scheme is case-insensitive (RFC 9110)');
  t.equal(presentedKey(`BEARER   ${A}  `, '', 'bearer'), A, 'surrounding blanks tolerated');
});

t.test('malformed Authorization values present no key', async (t) => {
  for (const v of ['', 'Bearer', 'Bearer ', `Basic ${A}`, A, `Bearer ${A} extra`, `Bearer ${A.slice(0, 20)}`, `Bearer sk-${'x'.repeat(43)}`, `Token ${A}`]) {
    t.equal(bearerKey(v), '', JSON.stringify(v));
  }
});

t.test('rule 3: x-api-key only where the carrier allows it', async (t) => {
  t.equal(presentedKey('', A, 'bearer'), '', 'a bearer-only surface does not read x-api-key');
  t.equal(presentedKey('', A, 'bearer_or_x_api_key'), A, 'the messages surfaces read it');
  t.equal(presentedKey('', ` ${A} `, 'bearer_or_x_api_key'), A);
  t.equal(presentedKey('', `Bearer ${A}`, 'bearer_or_x_api_key'), '', 'x-api-key carries the bare key');
  t.equal(presentedKey('', 'garbage', 'bearer_or_x_api_key'), '');
});

t.test('rule 4: both present, a well-formed Authorization wins and x-api-key is not read', async (t) => {
  t.equal(presentedKey(`Bearer ${A}`, B, 'bearer_or_x_api_key'), A, 'disagreement is no refusal');
  t.equal(presentedKey(`Bearer ${A}`, 'garbage', 'bearer_or_x_api_key'), A, 'a malformed x-api-key is not even looked at');
  t.equal(presentedKey(`Basic dXNlcjpwYXNz`, B, 'bearer_or_x_api_key'), B, 'an Authorization that is not a bearer key does not hide x-api-key');
  t.equal(presentedKey(`Basic dXNlcjpwYXNz`, B, 'bearer'), '', '…on surfaces that read x-api-key at all');
});
