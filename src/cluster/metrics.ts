// /metrics covers the whole instance: the answering worker asks the primary,
// which gathers every worker's snapshot and merges them.
import type { LedgerHost } from '../ledger/index.js';
import type { Metrics, MetricsSnapshot } from '../metrics/registry.js';
import { mergeSnapshots, renderPrometheus } from '../metrics/registry.js';
import type { PrimaryChannel, WorkerChannel } from '../ipc/channel.js';

export function serveMetricsFromPrimary(channel: PrimaryChannel, own: Metrics): void {
  channel.on('metrics:collect', async () => {
    const snaps = await Promise.all(
      channel.workers().map((w) => channel.request<MetricsSnapshot>(w, 'metrics:snapshot', undefined, 2000).catch(() => null)),
    );
    return renderPrometheus(mergeSnapshots([own.snapshot(), ...snaps.filter((s): s is MetricsSnapshot => s !== null)]));
  });
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

export function workerMetrics(channel: WorkerChannel, own: Metrics): () => Promise<string> {
  channel.on('metrics:snapshot', () => own.snapshot());
  return () => channel.request<string>('metrics:collect', undefined, 3000);
}
