// typical_request of each catalog model: the average spend of one finished
// (completed) request over the last window, from usage rows. Recomputed by
// the primary every catalog.typical_refresh_ms in one statement; a new
// catalog revision is published only when a figure changed, so workers
// reload (and re-render the model list) only then.
import type { ChangeBus } from '../bus/bus.js';
import type { Logger } from '../log/logger.js';
import { inTransaction, type Pool } from '../store/pool.js';
import { publishRevision } from './publish.js';

export async function refreshTypicalRequests(pool: Pool, windowDays: number): Promise<number | null> {
  return inTransaction(pool, async (db) => {
    const { rowCount } = await db.query(
      `INSERT INTO model_typical_requests AS t (model_id, requests, average_charged_micros, average_input_tokens, average_output_tokens, window_days, computed_at)
       SELECT m.model_id, count(*), round(avg(u.charged_micros)), round(avg(u.input_tokens)), round(avg(u.output_tokens)), $1, now()
         FROM usage_records u JOIN models m ON m.model_id::text = u.model_id
        WHERE u.outcome = 'completed' AND u.finished_at > now() - make_interval(days => $1)
        GROUP BY m.model_id
       ON CONFLICT (model_id) DO UPDATE SET requests = EXCLUDED.requests, average_charged_micros = EXCLUDED.average_charged_micros,
         average_input_tokens = EXCLUDED.average_input_tokens, average_output_tokens = EXCLUDED.average_output_tokens,
         window_days = EXCLUDED.window_days, computed_at = EXCLUDED.computed_at
       WHERE (t.requests, t.average_charged_micros, t.average_input_tokens, t.average_output_tokens, t.window_days)
         IS DISTINCT FROM (EXCLUDED.requests, EXCLUDED.average_charged_micros, EXCLUDED.average_input_tokens, EXCLUDED.average_output_tokens, EXCLUDED.window_days)`,
      [windowDays],
    );
    return rowCount === 0 ? null : publishRevision(db, 'typical request statistics');
  });
}

/** Runs the refresh every `everyMs` in the primary; returns the stop function. */
export function scheduleTypicalRequests(pool: Pool, bus: ChangeBus, everyMs: number, windowDays: number, logger: Logger): () => void {
  let timer: NodeJS.Timeout | null = null;
  const run = async (): Promise<void> => {
    try {
      const revision = await refreshTypicalRequests(pool, windowDays);
      if (revision !== null) await bus.publish('catalog', String(revision));
    } catch (err) {
      logger.warn({ err: (err as Error).message }, 'typical request statistics not refreshed');
    }
    if (timer !== null) timer = setTimeout(() => void run(), everyMs).unref();
  };
  timer = setTimeout(() => void run(), everyMs).unref();
  return () => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
  };
}
