// /metrics covers the whole instance: the answering worker asks the primary,
// which gathers every worker's snapshot and merges them.
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

export function workerMetrics(channel: WorkerChannel, own: Metrics): () => Promise<string> {
  channel.on('metrics:snapshot', () => own.snapshot());
  return () => channel.request<string>('metrics:collect', undefined, 3000);
}
