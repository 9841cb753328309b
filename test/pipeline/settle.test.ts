// Settling a call that ended without an answer (src/pipeline/settle.ts,
// issue 30 item 12): failed and cancelled-before-dispatch charge nothing; a
// call cancelled after dispatch is charged its input (at most the input bound
// held) plus what was delivered, as an estimate; images, billed per unit,
// cost nothing when none was delivered.
import t from 'tap';
import type { Bound, Metered, Outcome } from '../../src/billing/types.js';
import type { ModelCall } from '../../src/pipeline/call.js';
import { meterCancelled, settleUnanswered } from '../../src/pipeline/settle.js';

interface Settled {
  metered: Metered | null;
  outcome: Outcome;
}

function fakeCall(opts: { aborted: boolean; bound: Bound; counts?: number[] | Error }): { call: ModelCall; settled: Settled[]; counted: string[][] } {
  const settled: Settled[] = [];
  const counted: string[][] = [];
  const call = {
    settled: false,
    hold: { bound: opts.bound },
    key: { orgId: 'org' },
    prepared: {},
    supplier: 'sim',
    firstByteMs: null,
    trace: null,
    ctx: { aborted: opts.aborted, startedAt: performance.now(), requestId: 'r' },
    surface: { inputText: () => 'the prompt' },
    deps: {
      logger: { warn: () => {} },
      offload: {
        countTokens: async (texts: string[]) => {
          counted.push(texts);
          if (opts.counts instanceof Error) throw opts.counts;
          return opts.counts ?? [0, 0];
        },
      },
      billing: {
        // No usage row delivered (null): this fake records what was asked, the metrics count nothing.
        settle: async (_hold: unknown, metered: Metered | null, outcome: Outcome) => (settled.push({ metered, outcome }), null),
      },
    },
  } as unknown as ModelCall;
  return { call, settled, counted };
}

const CHAT: Bound = { inputTokens: 500, outputTokens: 1000, imageUnits: 0 };

t.test('a failure charges nothing, whether dispatched or not', async (t) => {
  const { call, settled, counted } = fakeCall({ aborted: false, bound: CHAT });
  await settleUnanswered(call, true);
  t.same(settled, [{ metered: null, outcome: 'failed' }]);
  t.same(counted, [], 'nothing counted');
});

t.test('cancelled before dispatch: nothing reached a supplier, nothing charged', async (t) => {
  const { call, settled, counted } = fakeCall({ aborted: true, bound: CHAT });
  await settleUnanswered(call, false);
  t.same(settled, [{ metered: null, outcome: 'cancelled' }]);
  t.same(counted, []);
});

t.test('issue 30 item 12: cancelled after dispatch: the input counted locally, as an estimate', async (t) => {
  const { call, settled, counted } = fakeCall({ aborted: true, bound: CHAT, counts: [120, 0] });
  await settleUnanswered(call, true);
  t.same(counted, [['the prompt', '']]);
  t.equal(settled.length, 1);
  t.equal(settled[0].outcome, 'cancelled');
  t.same(settled[0].metered, { inputTokens: 120, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 0, imageUnits: 0, source: 'estimate' });
  await settleUnanswered(call, true);
  t.equal(settled.length, 1, 'settled once');
});

t.test('issue 30 item 12: the input charged is at most the input bound held; delivered output counts', async (t) => {
  const { call } = fakeCall({ aborted: true, bound: CHAT, counts: [900, 7] });
  const m = await meterCancelled(call, null, 'seven tokens delivered');
  t.equal(m.inputTokens, 500);
  t.equal(m.outputTokens, 7);
  t.equal(m.source, 'estimate');
});

t.test("the supplier's usage wins when it came", async (t) => {
  const { call, counted } = fakeCall({ aborted: true, bound: CHAT });
  const usage: Metered = { inputTokens: 42, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 3, imageUnits: 0, source: 'supplier' };
  t.equal(await meterCancelled(call, usage, 'abc'), usage);
  t.same(counted, []);
});

t.test('a failed count falls back to the upper estimate: the input bound', async (t) => {
  const { call } = fakeCall({ aborted: true, bound: CHAT, counts: new Error('no tokenizer') });
  const m = await meterCancelled(call, null, '');
  t.equal(m.inputTokens, 500);
  t.equal(m.outputTokens, 0);
  t.equal(m.source, 'estimate');
});

t.test('images (no input bound, billed per unit): nothing counted, nothing charged', async (t) => {
  const { call, counted } = fakeCall({ aborted: true, bound: { inputTokens: 0, outputTokens: 0, imageUnits: 2 } });
  const m = await meterCancelled(call, null, '');
  t.same(counted, []);
  t.same([m.inputTokens, m.outputTokens, m.imageUnits], [0, 0, 0]);
});
