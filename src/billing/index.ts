// Billing's public face. In a cluster worker the pipeline gets its Billing
// from worker.ts, which builds it once:
//
//   const ledger = await connectLedger(config, channel, pool, logger);         // ledger/index.ts
//   const billing = createBilling({ ledger, logger, metrics });
//
// and passes `billing` to whatever builds the model routes. The pipeline calls
// billing.reserve(...) before the supplier and billing.settle(...) after, and
// never sees the ledger, its transport or a price table.
import { LedgerBilling, type BillingDeps } from './billing.js';
import type { Billing } from './types.js';

export type { Billing, Bound, Hold, Metered, Outcome, Surface, Timings } from './types.js';
export type { BillingDeps } from './billing.js';
export { boundCost, settlementCharge, costOf } from './pricing.js';

export function createBilling(deps: BillingDeps): Billing {
  return new LedgerBilling(deps);
}
