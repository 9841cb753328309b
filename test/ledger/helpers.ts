// Small builders shared by the ledger tests.
import type { Funding } from '../../src/auth/types.js';
import { Ledger, type LedgerSettings } from '../../src/ledger/ledger.js';
import type { UsageRow } from '../../src/ledger/protocol.js';
import type { LedgerStore } from '../../src/ledger/store.js';
import { createLogger } from '../../src/log/logger.js';

export const ORG = '11111111-1111-4111-8111-111111111111';
export const T0 = 1_700_000_000_000;

export const SETTINGS: LedgerSettings = { flushMs: 20, journalMaxLagMs: 1000, holdLeaseMs: 1000, holdMaxMs: 60_000, quotaPerSecond: 1000, quotaPerMinute: 100_000 };

export class FakeClock {
  constructor(public now = T0) {}
  readonly read = (): number => this.now;
  advance(ms: number): void {
    this.now += ms;
  }
}

export function makeLedger(store: LedgerStore, settings: Partial<LedgerSettings> = {}, clock = new FakeClock()): { ledger: Ledger; clock: FakeClock } {
  const ledger = new Ledger(store, { ...SETTINGS, ...settings }, createLogger('silent', 'test'), clock.read);
  return { ledger, clock };
}

export function usage(requestId: string, charged: number, reserved: number, funding: Funding = 'balance', orgId = ORG): UsageRow {
  return {
    requestId,
    orgId,
    keyId: 'key-1',
    modelId: 'model-1',
    supplier: 'sim',
    surface: 'chat_completions',
    funding,
    inputTokens: 10,
    cachedInputTokens: 0,
    outputTokens: 5,
    imageUnits: 0,
    reservedMicros: reserved,
    chargedMicros: charged,
    outcome: 'completed',
    meteredSource: 'supplier',
    overdraftMicros: 0,
    holdExpired: false,
    ttfbMs: 5,
    totalMs: 10,
    finishedAt: T0,
  };
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
