// The one gateway each clients-*.test.ts file starts (issue 31): the
// simulator's three instances as the suppliers, two workers, one funded key.
import type { Test } from 'tap';
import { gatewayWithSimulator } from '../helpers/gateway.js';
import { provision } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';

/** The gateway's base URL and a key with 50.00 to spend; null when no test database is configured. */
export async function clientsGateway(t: Test): Promise<{ url: string; key: string } | null> {
  const db = await testDatabase(t);
  if (db === null) return null;
  const { gw } = await gatewayWithSimulator(t, db, { workers: 2 });
  const { key } = await provision(gw.url, { balance: '50.00' });
  return { url: gw.url, key };
}
