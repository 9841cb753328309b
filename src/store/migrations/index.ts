// Every migration, in order. A migration never changes once released: fix
// forward with a new number.
import catalog from './001-catalog.js';
import organizationsKeys from './002-organizations-keys.js';
import billing from './003-billing.js';
import typicalRequests from './004-typical-requests.js';
import moneyLimitsOverdraft from './005-money-limits-overdraft.js';
import consoleAccounts from './006-console-accounts.js';
import responseOwners from './007-response-owners.js';
import balanceParts from './008-balance-parts.js';
import keyQuotas from './009-key-quotas.js';
import chargesInUsageRows from './010-charges-in-usage-rows.js';
import keyChangeNotify from './011-key-change-notify.js';

export interface Migration {
  id: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: Migration[] = [catalog, organizationsKeys, billing, typicalRequests, moneyLimitsOverdraft, consoleAccounts, responseOwners, balanceParts, keyQuotas, chargesInUsageRows, keyChangeNotify];
