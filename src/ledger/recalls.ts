// Allotments the ledger has asked their workers to give back (allotments.ts),
// and whoever waits for them: a refusal, which counts only once they are
// back, and an account view. The host says how a recall reaches a worker.
import type { OrgActor } from './actor.js';

/** How long a refusal or an account view waits for the allotments it recalled; then it decides on what came back. */
const RECALL_WAIT_MS = 1000;

export class Recalls {
  /**
   * Asks an allotment's owner to retire it (the embedded host: one IPC
   * message to that worker, which answers with a RetiredCommand). False when
   * the owner cannot be reached. Null: no host grants allotments.
   */
  recaller: ((owner: string, id: string, orgId: string) => boolean) | null = null;
  /** Allotments recalled and not yet retired, by id. */
  private readonly waiting = new Map<string, { done: Promise<void>; resolve: () => void; sentAt: number }>();

  /** Recalls every open allotment of the organization; resolves once all are retired, or after RECALL_WAIT_MS. */
  all(actor: OrgActor, now = Date.now()): Promise<void> {
    if (actor.allotments.open === 0 || this.recaller === null) return Promise.resolve();
    const waits: Promise<void>[] = [];
    for (const hold of actor.holds.values()) {
      if (hold.allotment !== true) continue;
      let recall = this.waiting.get(hold.requestId);
      if (recall === undefined) {
        let resolve!: () => void;
        const done = new Promise<void>((r) => (resolve = r));
        recall = { done, resolve, sentAt: now };
        this.waiting.set(hold.requestId, recall);
        if (!this.recaller(hold.owner, hold.requestId, hold.orgId)) this.gone(hold.requestId);
      } else if (now - recall.sentAt >= RECALL_WAIT_MS) {
        // Unanswered past the wait: the recall (a pub/sub message while Redis was away) may be lost; ask again,
        // rather than have every later refusal and account view wait RECALL_WAIT_MS for it.
        recall.sentAt = now;
        if (!this.recaller(hold.owner, hold.requestId, hold.orgId)) this.gone(hold.requestId);
      }
      waits.push(recall.done);
    }
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, RECALL_WAIT_MS);
      void Promise.all(waits).then(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** Allotment `id` is retired, or voided with its owner: whoever waits for it goes on. */
  gone(id: string): void {
    const recall = this.waiting.get(id);
    if (recall === undefined) return;
    this.waiting.delete(id);
    recall.resolve();
  }
}
