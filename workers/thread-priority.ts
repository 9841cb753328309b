// Lowers the scheduling priority of the pool thread that imports it (every
// task file does; a module runs once per thread). The pool moves CPU work off
// the event loop but, on a busy core, not off the CPU the event loop needs:
// at a higher nice value the kernel gives this thread what the HTTP worker's
// event loop leaves, so small calls keep their latency beside a large body or
// reply being decoded (pools.piscina_nice; docs/performance.md has the
// measurements). Linux applies setpriority to one thread when given its tid;
// elsewhere this is a no-op.
import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { isMainThread } from 'node:worker_threads';
import { workerData } from 'piscina';

/** The kernel's id of the calling thread, or null where /proc/thread-self does not exist (not Linux). */
export function threadId(): number | null {
  try {
    // "<pid>/task/<tid>"
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    return Number.isInteger(tid) && tid > 0 ? tid : null;
  } catch {
    return null;
  }
}

/**
 * Raises the calling thread's nice value by `increment` over the one it
 * inherited (the HTTP worker's: a gateway started under `nice 5` runs its
 * pool at 5 + increment), up to 19; false where that cannot be done.
 */
export function niceThisThread(increment: number): boolean {
  const tid = threadId();
  if (tid === null) return false;
  try {
    setPriority(tid, Math.min(19, getPriority(tid) + increment));
    return true;
  } catch {
    return false;
  }
}

// Never the HTTP worker's own thread: task modules are also loaded there when a task runs inline.
const nice = (workerData as { nice?: unknown } | undefined)?.nice;
if (!isMainThread && typeof nice === 'number' && nice > 0) niceThisThread(nice);
