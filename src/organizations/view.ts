// An organization as the operator reads it, from the console API and the
// `tollgate` command alike: money as decimal strings ("25.00"), from the
// stored row, or (organizationMoneyView) as the running actor sees it,
// holds included.
import type { AccountView } from '../ledger/protocol.js';
import { formatMoney } from '../money/money.js';
import type { OrganizationRow } from './store.js';

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

export function organizationMoneyView(row: OrganizationRow, a: AccountView): Record<string, unknown> {
  return {
    object: 'organization',
    id: row.id,
    name: row.name,
    created_at: row.created_at.toISOString(),
    balance: formatMoney(a.balance),
    held: formatMoney(a.heldBalance),
    available: formatMoney(a.balance - a.heldBalance),
    package: formatMoney(a.package),
    package_held: formatMoney(a.heldPackage),
    package_available: formatMoney(a.packageExpired ? 0 : a.package - a.heldPackage),
    package_expires_at: a.packageExpiresAt,
    package_expired: a.packageExpired,
    open_holds: a.openHolds,
    quotas: {
      per_second: a.quotaPerSecond,
      per_minute: a.quotaPerMinute,
      per_second_source: a.quotaPerSecondIsDefault ? 'default' : 'organization',
      per_minute_source: a.quotaPerMinuteIsDefault ? 'default' : 'organization',
    },
  };
}
