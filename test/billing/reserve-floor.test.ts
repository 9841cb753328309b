// Billing's reservation when the cheap input estimate does not fit (issue 38
// item 2): the text is counted only when some count could make the call fit;
// when even the floor (no text at all: the output bound alone) is more than
// what is available, the refusal stands at once, without a count.
import t from 'tap';
import type { ApiKey } from '../../src/auth/types.js';
import { LedgerBilling } from '../../src/billing/billing.js';
import type { Bound, TighterBound } from '../../src/billing/types.js';
import type { CatalogModel } from '../../src/catalog/types.js';
import type { LedgerClient, ReserveReply, ReserveRequest } from '../../src/ledger/protocol.js';
import type { Logger } from '../../src/log/logger.js';

/** A ledger with `available` micros: holds what fits, refuses the rest as the actor does. */
function ledger(available: number): { client: LedgerClient; asked: number[] } {
  const asked: number[] = [];
  const client = {
    reserve: async (req: ReserveRequest): Promise<ReserveReply> => {
      asked.push(req.amount);
      if (req.amount <= available) return { ok: true } as ReserveReply;
      return { ok: false, code: 'insufficient_funds', funding: 'balance', required: req.amount, available, packageExpiredAt: null } as ReserveReply;
    },
    reserveHere: () => false, // no allotment: every call is asked
    release: async () => {},
  } as unknown as LedgerClient;
  return { client, asked };
}

const logger = { warn: () => {}, error: () => {}, info: () => {} } as unknown as Logger;
const key = { id: 'k', orgId: 'o', funding: 'balance' } as ApiKey;
// 1 micro per input token, 2 per output token (per million: 1e6 and 2e6).
const model = { modelId: 'm', price: { inputPerMtok: 1_000_000, cachedInputPerMtok: 1_000_000, outputPerMtok: 2_000_000, imageUnit: 0 } } as unknown as CatalogModel;
const bound: Bound = { inputTokens: 4000, outputTokens: 100, imageUnits: 0 };

/** A tighter bound whose floor and count give these input tokens; `counts()` says how often it was counted. */
function tighter(floorInput: number, countedInput: number): { tb: TighterBound; counts: () => number } {
  let counts = 0;
  const tb: TighterBound = {
    floor: () => ({ ...bound, inputTokens: floorInput }),
    count: async () => {
      counts++;
      return { ...bound, inputTokens: countedInput };
    },
  };
  return { tb, counts: () => counts };
}

t.test('issue 38 item 2: nothing available: refused at once, no count', async (t) => {
  const { client, asked } = ledger(0);
  const billing = new LedgerBilling({ ledger: client, logger });
  const tb = tighter(24, 1000);
  await t.rejects(async () => billing.reserve('r1', key, model, 'chat_completions', bound, tb.tb), { code: 'insufficient_funds' });
  t.equal(tb.counts(), 0, 'the text was not counted');
  t.same(asked, [4200], 'one round trip');
});

t.test('issue 38 item 2: less than the output bound alone: refused at once, no count', async (t) => {
  const { client } = ledger(199);
  const tb = tighter(0, 10);
  await t.rejects(async () => new LedgerBilling({ ledger: client, logger }).reserve('r2', key, model, 'chat_completions', bound, tb.tb), { code: 'insufficient_funds' });
  t.equal(tb.counts(), 0);
});

t.test('a count that can help is made, and its bound held', async (t) => {
  const { client, asked } = ledger(1500);
  const tb = tighter(24, 1000);
  const hold = await new LedgerBilling({ ledger: client, logger }).reserve('r3', key, model, 'chat_completions', bound, tb.tb);
  t.equal(tb.counts(), 1, 'counted once');
  t.same(asked, [4200, 1200]);
  t.equal(hold.reserved, 1200);
  t.equal(hold.inputCounted, true);
});
