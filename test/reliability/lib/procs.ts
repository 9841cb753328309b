// Processes of a running gateway, from /proc: the primary and its children
// (workers; the embedded PostgreSQL's postmaster), and their resident memory.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

function stat(pid: number): { ppid: number; comm: string; state: string } | null {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const close = s.lastIndexOf(')');
    const rest = s.slice(close + 2).split(' ');
    return { comm: s.slice(s.indexOf('(') + 1, close), state: rest[0], ppid: Number(rest[1]) };
  } catch {
    return null;
  }
}

/** Live direct children of `pid`. */
export function children(pid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const s = stat(Number(name));
    if (s !== null && s.ppid === pid && s.state !== 'Z' && s.state !== 'X') out.push(Number(name));
  }
  return out.sort((a, b) => a - b);
}

/** Resident memory in bytes, or 0 for a process gone. */
export function rss(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m === null ? 0 : Number(m[1]) * 1024;
  } catch {
    return 0;
  }
}

/** Role label of a gateway process: the primary, a node worker, or the embedded store. */
export function roleOf(primary: number, pid: number): string {
  if (pid === primary) return 'primary';
  const s = stat(pid);
  return s !== null && s.comm.startsWith('postgres') ? 'postgres' : 'worker';
}

export interface RssSeries {
  /** label ("worker 1234") → samples in bytes, in order. */
  series: Map<string, number[]>;
  sample(): void;
}

/** RSS of the primary and every child it has at each sample (a replaced worker starts a new series). */
export function rssSeries(primary: () => number[]): RssSeries {
  const series = new Map<string, number[]>();
  return {
    series,
    sample() {
      for (const p of primary()) {
        for (const pid of [p, ...children(p)]) {
          const bytes = rss(pid);
          if (bytes === 0) continue;
          const label = `${roleOf(p, pid)} ${pid}`;
          const s = series.get(label) ?? [];
          s.push(bytes);
          series.set(label, s);
        }
      }
    },
  };
}

/** Sockets listening on a TCP port of this machine (one per worker of a gateway), from `ss`. */
export function listeners(port: number): number {
  const out = execFileSync('ss', ['-ltnH', `sport = :${port}`], { encoding: 'utf8' });
  return out.split('\n').filter((l) => l.includes('LISTEN')).length;
}
