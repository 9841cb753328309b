// One gateway (or one `tollgate` command opening the store itself) per data
// directory. The lock file names the holder by pid and, on Linux, by its
// start time, so a pid reused after a crash is not mistaken for the holder.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const LOCK_FILE = 'gateway.lock';

interface Holder {
  pid: number;
  /** Clock ticks since boot at which the process started (field 22 of /proc/<pid>/stat); null off Linux. */
  start: number | null;
}

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function startTime(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
  } catch {
    return null;
  }
}

function readHolder(dataDir: string): Holder | null {
  try {
    const raw = readFileSync(join(dataDir, LOCK_FILE), 'utf8').trim();
    // Older gateways wrote the bare pid.
    const parsed = /^\d+$/.test(raw) ? { pid: Number(raw), start: null } : (JSON.parse(raw) as Holder);
    return Number.isInteger(parsed.pid) ? parsed : null;
  } catch {
    return null;
  }
}

/** The live process holding the data directory, or null. */
export function lockHolder(dataDir: string): number | null {
  const h = readHolder(dataDir);
  if (h === null || !pidAlive(h.pid)) return null;
  if (h.start !== null) {
    const now = startTime(h.pid);
    if (now !== null && now !== h.start) return null; // the pid was reused by another process
  }
  return h.pid;
}

/** Takes the data directory; throws when a live gateway or command holds it. Answers the release. */
export function lockDataDir(dataDir: string): () => void {
  mkdirSync(dataDir, { recursive: true });
  const holder = lockHolder(dataDir);
  if (holder !== null && holder !== process.pid) throw new Error(`data directory ${dataDir} is in use by process ${holder}`);
  const path = join(dataDir, LOCK_FILE);
  writeFileSync(path, JSON.stringify({ pid: process.pid, start: startTime(process.pid) }), { mode: 0o600 });
  return () => {
    if (readHolder(dataDir)?.pid === process.pid) rmSync(path, { force: true });
  };
}
