// Reliability, hold age (issue 17: "none older than hold_max_ms ever"): with
// billing.hold_max_ms at 2 s, streams that last about 4 s while their worker
// lives and renews them. /metrics is sampled every 100 ms throughout: the
// oldest open hold is never older than hold_max_ms, the holds the streams
// were reserved from (their own, or their allotment's) are voided by age, and
// each call is still answered whole and charged once (a settlement whose hold
// was voided charges all the same).
import t from 'tap';
import { scrape } from '../ledger/scrape.js';
import { call } from './lib/load.js';
import { rowOf, scenario, startRig } from './lib/rig.js';

const HOLD_MAX_MS = 2000;
const rig = await startRig(t, { config: { billing: { hold_max_ms: HOLD_MAX_MS } } });
if (rig !== null) {
  const { gw } = rig;

  t.test('streams that outlive billing.hold_max_ms: no hold older than it, every call charged once', async (t) => {
    await scenario(t, rig, 'streams longer than hold_max_ms', async () => {
      const { key } = await rig.org();
      const expiredBefore = (await scrape(gw.opsUrl)).sum('tollgate_ledger_expired_holds_total');
      let oldest = 0;
      let samples = 0;
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          oldest = Math.max(oldest, (await scrape(gw.opsUrl)).sum('tollgate_ledger_oldest_hold_seconds') * 1000);
          samples++;
          await new Promise((r) => setTimeout(r, 100));
        }
      })();
      const started = performance.now();
      // 40 words, 100 ms before each chunk: about 4 s of stream.
      const results = await Promise.all(Array.from({ length: 3 }, () => call(gw.url, key, 'chat-stream', 'long [sim:words=40] [sim:delay_ms=100]')));
      const tookMs = performance.now() - started;
      sampling = false;
      await sampler;
      t.ok(tookMs > 2 * HOLD_MAX_MS * 0.9, `the streams lasted ${tookMs.toFixed(0)} ms, about twice hold_max_ms`);
      t.ok(samples > 20, `${samples} scrapes of /metrics while they ran`);
      t.ok(oldest > 0 && oldest <= HOLD_MAX_MS, `the oldest open hold was ${oldest.toFixed(0)} ms old at most (hold_max_ms ${HOLD_MAX_MS})`);
      // A stream reserved from its worker's allotment has no hold of its own: the allotment's hold carries it (and
      // others), so three streams void one to three holds, as the calls fall on workers and allotments.
      const expired = (await scrape(gw.opsUrl)).sum('tollgate_ledger_expired_holds_total') - expiredBefore;
      t.ok(expired >= 1 && expired <= 3, `the holds the streams were reserved from were voided by age (${expired})`);
      for (const r of results) {
        t.equal(r.outcome, 'ok', `answered whole (${r.status} ${r.fault ?? ''})`);
        const row = await rowOf(rig, r.requestId);
        t.ok(row.outcome === 'completed' && row.charged > 0, `settled completed and charged (${row.charged} µ) after its hold was voided`);
      }
    });
  });
}
