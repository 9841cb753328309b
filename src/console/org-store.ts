// Organization input and view as the operator sees them (console API and the
// `tollgate` command share these). Money is integer micros in the store and a
// decimal string ("25.00") wherever it crosses to the operator. Rows are
// written and read by ledger/accounts.ts, which keeps money and journal equal.
import { formatMoney, MAX_MONEY, moneyTooLarge, parseMoney } from '../money/money.js';
import { GatewayError, type FieldDetail } from '../errors/gateway-error.js';
import type { OrganizationRow } from '../ledger/accounts.js';

export interface OrgCreateInput {
  name: string;
  balanceMicros: number;
}

export function parseOrganizationInput(body: unknown): OrgCreateInput {
  const details: FieldDetail[] = [];
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    details.push({ field: '(body)', issue: 'must be a JSON object' });
    throw new GatewayError('invalid_request', { param: '(body)', fieldDetails: details });
  }
  const b = body as Record<string, unknown>;
  for (const k of Object.keys(b)) if (k !== 'name' && k !== 'balance') details.push({ field: k, issue: 'unknown member' });
  const name = typeof b.name === 'string' ? b.name.trim() : '';
  if (name === '' || name.length > 200 || /[\u0000-\u001f\u007f]/.test(name)) {
    details.push({ field: 'name', issue: 'must be a non-empty string of at most 200 characters' });
  }
  const balanceMicros = b.balance === undefined ? 0 : parseMoney(b.balance);
  if (moneyTooLarge(b.balance)) details.push({ field: 'balance', issue: `must be at most ${MAX_MONEY}` });
  else if (balanceMicros === null) details.push({ field: 'balance', issue: 'must be a non-negative decimal string such as "10.00"' });
  if (details.length > 0) throw new GatewayError('invalid_request', { param: details[0].field, fieldDetails: details });
  return { name, balanceMicros: balanceMicros! };
}

export function organizationView(row: OrganizationRow): Record<string, unknown> {
  return {
    object: 'organization',
    id: row.id,
    name: row.name,
    balance: formatMoney(row.balance_micros),
    package: formatMoney(row.package_micros),
    package_expires_at: row.package_expires_at === null ? null : row.package_expires_at.toISOString(),
    created_at: row.created_at.toISOString(),
  };
}
