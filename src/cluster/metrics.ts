// /metrics covers the whole instance: the primary serves it on the operator
// listener (server/ops-server.ts), asks every worker for its snapshot and
// merges them with its own.
import type { LedgerHost } from '../ledger/index.js';
import type { Metrics, MetricsSnapshot } from '../metrics/registry.js';
import { mergeSnapshots, renderPrometheus } from '../metrics/registry.js';
import type { PrimaryChannel, WorkerChannel } from '../ipc/channel.js';

/** The instance's Prometheus text: the primary's series and every worker's that answers within 2 s. */
export function instanceMetrics(channel: PrimaryChannel, own: Metrics): () => Promise<string> {
  return async () => {
    const snaps = await Promise.all(
      channel.workers().map((w) => channel.request<MetricsSnapshot>(w, 'metrics:snapshot', undefined, 2000).catch(() => null)),
    );
    return renderPrometheus(mergeSnapshots([own.snapshot(), ...snaps.filter((s): s is MetricsSnapshot => s !== null)]));
  };
}

/** The ledger host's books as gauges of the primary (the actors live there). */
export function watchLedger(metrics: Metrics, host: LedgerHost): void {
  metrics.addGauges(() => {
    const s = host.stats();
    const out: Record<string, number> = {
      ledger_open_holds: s.openHolds,
      ledger_open_allotments: s.allotments,
      ledger_held_micros: s.heldMicros,
      ledger_oldest_hold_seconds: s.oldestHoldMs / 1000,
      ledger_active_organizations: s.actors,
      ledger_journal_backlog: s.backlog,
      ledger_journal_flush_lag_seconds: s.flushLagMs / 1000,
      ledger_overdraft_micros_total: s.overdraftMicros,
      ledger_overdraft_settlements_total: s.overdraftSettlements,
      ledger_expired_holds_total: s.expiredHolds,
      ledger_progress_settlements_total: s.progressSettled,
      ledger_worker_settlements_total: s.workerSettled,
      ledger_reservations_total: s.reservations,
      ledger_allotment_grants_total: s.grants,
      ledger_store_behind_waits_total: s.storeWaits,
      ledger_store_behind_refusals_total: s.storeRefusals,
      ledger_store_copy_writes_total: s.storeCopyWrites,
      ledger_store_statement_writes_total: s.storeStatementWrites,
    };
    if (s.shardsOwned !== undefined) {
      out.ledger_shards_owned = s.shardsOwned;
      out.ledger_shard_acquisitions_total = s.shardsAcquired ?? 0;
      out.ledger_shard_takeovers_total = s.shardsTakenOver ?? 0;
      out.ledger_shards_lost_total = s.shardsLost ?? 0;
    }
    return out;
  });
}

/** A worker's side: its snapshot, when the primary asks for a scrape. */
export function answerMetricsSnapshots(channel: WorkerChannel, own: Metrics): void {
  channel.on('metrics:snapshot', () => own.snapshot());
}
