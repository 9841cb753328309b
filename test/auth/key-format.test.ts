// The key's form: tg_sk_ + 43 base62 characters from the CSPRNG, SHA-256
// stored, two display fragments.
import { createHash } from 'node:crypto';
import t from 'tap';
import { DECOY_KEY, displayKey, generateKey, hashKey, isWellFormedKey, keyFragments, KEY_RANDOM_LENGTH } from '../../src/auth/key-format.js';

t.test('a new key: prefix, 43 base62 characters, fragments, SHA-256', async (t) => {
  const k = generateKey();
  t.match(k.secret, /^tg_sk_[0-9A-Za-z]{43}$/);
  t.ok(KEY_RANDOM_LENGTH >= 32, 'at least 32 random characters');
  t.equal(k.prefix, k.secret.slice(6, 12), 'first 6 characters of the random part');
  t.equal(k.last4, k.secret.slice(-4), 'last 4 characters');
  t.same(k.hash, createHash('sha256').update(k.secret).digest());
  t.same(hashKey(k.secret), k.hash);
  t.ok(isWellFormedKey(k.secret));
  t.equal(displayKey(k.prefix, k.last4), `tg_sk_${k.prefix}…${k.last4}`);
  t.same(keyFragments(k.secret), { prefix: k.prefix, last4: k.last4 });
});

t.test('keys are distinct and their characters uniform over base62', async (t) => {
  const seen = new Set<string>();
  const counts = new Map<string, number>();
  const n = 4000;
  for (let i = 0; i < n; i++) {
    const s = generateKey().secret;
    seen.add(s);
    for (const ch of s.slice(6)) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  }
  t.equal(seen.size, n);
  t.equal(counts.size, 62, 'every base62 character occurs');
  // Chi-square with 61 degrees of freedom: p = 0.001 at ~100; a modulo bias would show far above.
  const expected = (n * KEY_RANDOM_LENGTH) / 62;
  let chi = 0;
  for (const c of counts.values()) chi += (c - expected) ** 2 / expected;
  t.ok(chi < 110, `chi-square ${chi.toFixed(1)} < 110`);
});

t.test('well-formedness', async (t) => {
  t.ok(isWellFormedKey('tg_sk_' + 'a'.repeat(32)));
  t.notOk(isWellFormedKey('tg_sk_' + 'a'.repeat(31)), 'too short');
  t.notOk(isWellFormedKey('tg_sk_' + 'a'.repeat(129)), 'too long');
  t.notOk(isWellFormedKey('TG_SK_' + 'a'.repeat(43)), 'prefix is case-sensitive');
  t.notOk(isWellFormedKey('sk-' + 'a'.repeat(43)));
  t.notOk(isWellFormedKey('tg_sk_' + 'a'.repeat(42) + '-'), 'base62 only');
  t.notOk(isWellFormedKey(''));
  t.ok(isWellFormedKey(DECOY_KEY) && DECOY_KEY.length === 6 + KEY_RANDOM_LENGTH, 'the decoy is shaped like a real key');
});
