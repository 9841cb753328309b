// First start of the embedded default: a demo organization with a demo
// balance and one unrestricted key, so `npm start` is followed by a working
// call. The secret is returned to be printed once; it is stored hashed only.
import { randomUUID } from 'node:crypto';
import { DEFAULT_BINDING } from '../auth/key-input.js';
import { generateKey } from '../auth/key-format.js';
import { insertKey } from '../auth/key-store.js';
import { formatMoney, parseMoney } from '../money/money.js';
import { inTransaction, type Pool } from '../store/pool.js';
import { createOrganization } from '../organizations/store.js';

export const DEMO_ORGANIZATION_NAME = 'Demo organization';

export interface Demo {
  orgId: string;
  /** Decimal string, as configured (billing.demo_balance). */
  balance: string;
  keyId: string;
  secret: string;
}

/**
 * Creates the demo organization (starting with `balance`, the setting
 * billing.demo_balance) and its key when there is no organization at all;
 * null otherwise.
 */
export async function createDemoOrganization(pool: Pool, balance: string): Promise<Demo | null> {
  const balanceMicros = parseMoney(balance);
  if (balanceMicros === null) throw new Error(`billing.demo_balance: not a decimal amount: ${balance}`);
  return inTransaction(pool, async (db) => {
    await db.query('LOCK TABLE organizations IN EXCLUSIVE MODE');
    const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM organizations');
    if (rows[0].n > 0) return null;
    const org = await createOrganization(db, randomUUID(), DEMO_ORGANIZATION_NAME, balanceMicros);
    const key = generateKey();
    const keyId = randomUUID();
    await insertKey(db, keyId, org.id, { name: 'Demo key', scope: null, binding: DEFAULT_BINDING, funding: 'balance', expiresAt: null, quotaPerMinute: null }, key, null);
    return { orgId: org.id, balance: formatMoney(balanceMicros), keyId, secret: key.secret };
  });
}

/** What the first start prints to standard output: the key, once, and that it will not be shown again. */
export function demoBanner(demo: Demo): string {
  return (
    `Created the demo organization ${demo.orgId} with a balance of ${demo.balance}, and an unrestricted API key:\n` +
    `\n    ${demo.secret}\n\n` +
    'This key will not be shown again: copy it now (if it is lost, create another with `npx tollgate keys create`).\n'
  );
}
