// The API key itself: `tg_sk_` + 43 base62 characters from the CSPRNG
// (43 × log2(62) ≈ 256 bits). Only the SHA-256 of the whole key is stored; the
// two display fragments (first 6 characters of the random part, last 4 of the
// key) name it everywhere else. A fast hash is right here: the key is 256
// random bits, so there is nothing for a slow password hash to protect against,
// and the hot path hashes every presented key.
// A namespace import: crypto.hash is missing before Node 20.12, and a named import of it would fail to load there.
import * as crypto from 'node:crypto';

export const KEY_PREFIX = 'tg_sk_';
export const KEY_RANDOM_LENGTH = 43;
/** Accepted random-part lengths: ours are 43; the range leaves room to change it. */
const WELL_FORMED = /^tg_sk_[0-9A-Za-z]{32,128}$/;
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/**
 * A key-shaped string no generated key equals (in practice): hashed in place
 * of a missing or malformed key so that every refusal costs the same hash
 * over the same length as a real key.
 */
export const DECOY_KEY = KEY_PREFIX + '0'.repeat(KEY_RANDOM_LENGTH);

export interface NewKey {
  secret: string;
  hash: Buffer;
  prefix: string;
  last4: string;
}

/** Uniform base62 by rejection sampling: bytes ≥ 248 (= 4 × 62) are dropped, so `% 62` has no bias. */
function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    const bytes = crypto.randomBytes(length * 2);
    for (let i = 0; i < bytes.length && out.length < length; i++) {
      if (bytes[i] < 248) out += BASE62[bytes[i] % 62];
    }
  }
  return out;
}

/**
 * SHA-256 of a key, once per call: Node's one-shot crypto.hash (20.12 and
 * later) makes no Hash object (~1.3 µs against ~2.5 here); createHash where
 * it is missing (package.json allows 20.10).
 */
const sha256: (key: string) => Buffer =
  typeof crypto.hash === 'function' ? (key) => crypto.hash('sha256', key, 'buffer') : (key) => crypto.createHash('sha256').update(key).digest();

export function hashKey(key: string): Buffer {
  return sha256(key);
}

export function isWellFormedKey(token: string): boolean {
  return WELL_FORMED.test(token);
}

export function keyFragments(key: string): { prefix: string; last4: string } {
  return { prefix: key.slice(KEY_PREFIX.length, KEY_PREFIX.length + 6), last4: key.slice(-4) };
}

export function generateKey(): NewKey {
  const secret = KEY_PREFIX + randomBase62(KEY_RANDOM_LENGTH);
  return { secret, hash: hashKey(secret), ...keyFragments(secret) };
}

/** How a key is shown where the secret may not be: `tg_sk_Ab3dE9…x9Qz`. */
export function displayKey(prefix: string, last4: string): string {
  return `${KEY_PREFIX}${prefix}…${last4}`;
}
