// Billing's reservation of the common call: when an allotment of this process
// has room (LedgerClient.reserveHere), the hold comes back at once, not as a
// promise, and the actor is not asked; a key with a quota of its own, and a
// call no allotment takes, go to the actor as before.
import t from 'tap';
import type { ApiKey } from '../../src/auth/types.js';
import { LedgerBilling } from '../../src/billing/billing.js';
import type { Bound } from '../../src/billing/types.js';
import type { CatalogModel } from '../../src/catalog/types.js';
import type { LedgerClient, ReserveReply, ReserveRequest } from '../../src/ledger/protocol.js';
import type { Logger } from '../../src/log/logger.js';

/** A ledger whose allotment takes calls while `room` lasts; `here` and `asked` say which way each one went. */
function ledger(room: number): { client: LedgerClient; here: ReserveRequest[]; asked: ReserveRequest[] } {
  const here: ReserveRequest[] = [];
  const asked: ReserveRequest[] = [];
  const client = {
    reserveHere: (req: ReserveRequest): boolean => {
      if (req.keyQuota !== undefined || req.amount > room) return false;
      room -= req.amount;
      here.push(req);
      return true;
    },
    reserve: async (req: ReserveRequest): Promise<ReserveReply> => {
      asked.push(req);
      return { ok: true } as ReserveReply;
    },
    release: async () => {},
  } as unknown as LedgerClient;
  return { client, here, asked };
}

const logger = { warn: () => {}, error: () => {}, info: () => {} } as unknown as Logger;
const key = { id: 'k', orgId: 'o', funding: 'balance', quotaPerMinute: null } as ApiKey;
// 1 micro per input token, 2 per output token: the bound below costs 4,000 + 200 = 4,200 micros.
const model = { modelId: 'm', price: { inputPerMtok: 1_000_000, cachedInputPerMtok: 1_000_000, outputPerMtok: 2_000_000, imageUnit: 0 } } as unknown as CatalogModel;
const bound: Bound = { inputTokens: 4000, outputTokens: 100, imageUnits: 0 };

t.test('a call the allotment takes: the hold at once, nothing asked', async (t) => {
  const { client, here, asked } = ledger(10_000);
  const billing = new LedgerBilling({ ledger: client, logger });
  const hold = billing.reserve('r1', key, model, 'chat_completions', bound);
  t.notOk(hold instanceof Promise, 'not a promise');
  t.match(hold, { requestId: 'r1', orgId: 'o', keyId: 'k', reserved: 4200, bound, inputCounted: false });
  t.same(here, [{ requestId: 'r1', orgId: 'o', funding: 'balance', amount: 4200 }], 'taken here, for the bound’s cost');
  t.same(asked, [], 'the actor was not asked');
});

t.test('a call the allotment has no room for: asked, as a promise', async (t) => {
  const { client, here, asked } = ledger(5_000);
  const billing = new LedgerBilling({ ledger: client, logger });
  t.notOk(billing.reserve('r1', key, model, 'chat_completions', bound) instanceof Promise);
  const second = billing.reserve('r2', key, model, 'chat_completions', bound);
  t.ok(second instanceof Promise, 'a promise');
  t.match(await second, { requestId: 'r2', reserved: 4200 });
  t.same(here.map((r) => r.requestId), ['r1']);
  t.same(asked.map((r) => r.requestId), ['r2'], 'the second went to the actor');
});

t.test('a key with a quota of its own: always asked, with its quota', async (t) => {
  const { client, here, asked } = ledger(1_000_000);
  const billing = new LedgerBilling({ ledger: client, logger });
  const own = { ...key, quotaPerMinute: 60 } as ApiKey;
  const hold = billing.reserve('r1', own, model, 'chat_completions', bound);
  t.ok(hold instanceof Promise);
  await hold;
  t.same(here, []);
  t.same(asked, [{ requestId: 'r1', orgId: 'o', funding: 'balance', amount: 4200, keyQuota: { keyId: 'k', perMinute: 60 } }]);
});
