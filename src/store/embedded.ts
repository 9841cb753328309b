// The embedded default: a real PostgreSQL server that the gateway's primary
// (or a `tollgate` command, when no gateway runs) starts on data_dir, owns and
// stops. Everything else talks to it through the same pg Pool, migrations and
// LISTEN/NOTIFY as an external DATABASE_URL.
//
// Under data_dir:
//   postgres/           the cluster (PGDATA), owned by the server's account, mode 0700;
//                       its Unix socket lives inside it, so only that account (and root) can connect
//   postgres.password   the generated password of the `postgres` superuser, mode 0600
//   postgres.log        the server's own log
//   gateway.lock        who holds the directory (data-lock.ts)
import { randomBytes, createHash } from 'node:crypto';
import { chmodSync, chownSync, closeSync, existsSync, lstatSync, mkdirSync, openSync, readFileSync, realpathSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { lockDataDir, lockHolder } from './data-lock.js';
import { findBinaries, initCluster, recoverLeftovers, serverUser, startServer, type ServerUser } from './pg-server.js';

export { lockDataDir } from './data-lock.js';

export interface EmbeddedStore {
  /** postgres:// URL with the password: for this process and the workers it forks, never logged. */
  url: string;
  /** The server's process id. */
  pid: number;
  /** Whether this start created the cluster. */
  created: boolean;
  /** What was cleared before the start (an orphaned server, a stale postmaster.pid), for the log. */
  recovered: string | null;
  /** Resolves if the server exits on its own. */
  exited: Promise<void>;
  /** Stops the server cleanly and releases the data directory. Call after every client has closed. */
  close(): Promise<void>;
}

const SOCKET_PORT = 5432;
/** Unix socket paths are limited to 107 bytes; beyond, the server listens on a loopback port instead. */
const MAX_SOCKET_PATH = 100;

const passwordPath = (dataDir: string): string => join(dataDir, 'postgres.password');
export const clusterPath = (dataDir: string): string => join(dataDir, 'postgres');

function readPassword(dataDir: string): string {
  return readFileSync(passwordPath(dataDir), 'utf8').trim();
}

function canReach(dir: string, user: ServerUser): boolean {
  return spawnSync('test', ['-x', dir], { uid: user.uid, gid: user.gid }).status === 0;
}

/**
 * The cluster's directory, made if missing. As root the server runs as
 * `postgres`, which must be able to reach data_dir; when a parent is closed
 * to it (data_dir under /root), the cluster lives in /var/lib/tollgate/ and
 * data_dir/postgres is a symbolic link to it.
 */
function prepareCluster(dataDir: string, user: ServerUser | null): string {
  const link = clusterPath(dataDir);
  if (existsSync(link)) return realpathSync(link);
  if (lstatSync(link, { throwIfNoEntry: false }) !== undefined) throw new Error(`${link} is a link to a directory that is gone`);
  let dir = link;
  if (user !== null && !canReach(dataDir, user) && canReach(dirname(dataDir), user)) {
    // Only data_dir itself is closed (as mkdtemp makes it): let the server's account pass through it, not list it.
    chmodSync(dataDir, statSync(dataDir).mode | 0o001);
  }
  if (user !== null && !canReach(dataDir, user)) {
    dir = join('/var/lib/tollgate', createHash('sha256').update(dataDir).digest('hex').slice(0, 16));
    mkdirSync('/var/lib/tollgate', { recursive: true, mode: 0o755 });
    symlinkSync(dir, link);
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (user !== null) chownSync(dir, user.uid, user.gid);
  return dir;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

function storeUrl(password: string, host: string, port: number): string {
  return `postgres://postgres:${encodeURIComponent(password)}@${encodeURIComponent(host)}:${port}/postgres`;
}

/** The last lines of the server's log, to say why it did not start. */
function logTail(dataDir: string): string {
  try {
    const lines = readFileSync(join(dataDir, 'postgres.log'), 'utf8').trimEnd().split('\n').slice(-5);
    return `; the end of ${join(dataDir, 'postgres.log')}:\n  ${lines.join('\n  ')}`;
  } catch {
    return '';
  }
}

export interface EmbeddedOptions {
  /** The server's max_connections: every pool of every process, plus room for the `tollgate` command. */
  maxConnections: number;
}

export async function openEmbeddedStore(dataDir: string, opts: EmbeddedOptions): Promise<EmbeddedStore> {
  const unlock = lockDataDir(dataDir);
  let logFd: number | null = null;
  try {
    const bin = await findBinaries();
    const user = serverUser();
    const pgdata = prepareCluster(dataDir, user);
    logFd = openSync(join(dataDir, 'postgres.log'), 'a', 0o600);
    const created = !existsSync(join(pgdata, 'PG_VERSION'));
    if (created) {
      if (!existsSync(passwordPath(dataDir))) writeFileSync(passwordPath(dataDir), randomBytes(24).toString('base64url') + '\n', { mode: 0o600 });
      await initCluster(bin, pgdata, readPassword(dataDir), user, logFd);
    }
    if (!existsSync(passwordPath(dataDir))) throw new Error(`${passwordPath(dataDir)} is missing: the embedded store's password cannot be recovered (restore the file, or start afresh with an empty DATA_DIR)`);
    const password = readPassword(dataDir);
    const recovered = await recoverLeftovers(pgdata);

    const useSocket = join(pgdata, `.s.PGSQL.${SOCKET_PORT}`).length <= MAX_SOCKET_PATH;
    const port = useSocket ? SOCKET_PORT : await freePort();
    const settings: Record<string, string> = {
      port: String(port),
      listen_addresses: useSocket ? '' : '127.0.0.1',
      unix_socket_directories: useSocket ? pgdata : '',
      unix_socket_permissions: '0700',
      max_connections: String(opts.maxConnections),
      // A gateway's tables are small, and the OS page cache holds what the server's own cache does not: under
      // five minutes of mixed load 32 MB filled to the brim (the backend writing usage rows and the background
      // writer held ~28 MB of it between them, PSS), 16 MB caps that share (docs/performance.md, "Memory").
      shared_buffers: '16MB',
    };
    const server = await startServer(bin, pgdata, settings, user, logFd);
    closeSync(logFd);
    logFd = null;
    return {
      url: storeUrl(password, useSocket ? pgdata : '127.0.0.1', port),
      pid: server.pid,
      created,
      recovered,
      exited: server.exited,
      async close() {
        await server.stop();
        unlock();
      },
    };
  } catch (err) {
    if (logFd !== null) closeSync(logFd);
    unlock();
    throw new Error(`${(err as Error).message}${logTail(dataDir)}`, { cause: err });
  }
}

/**
 * Where the embedded store of a gateway (or command) running on `dataDir`
 * answers, read from the server's postmaster.pid; null when none runs.
 */
export function runningEmbeddedStore(dataDir: string): { url: string; pid: number } | null {
  const holder = lockHolder(dataDir);
  if (holder === null) return null;
  try {
    const lines = readFileSync(join(clusterPath(dataDir), 'postmaster.pid'), 'utf8').split('\n');
    const [port, socketDir, listen, status] = [Number(lines[3]), lines[4], lines[5].trim(), lines[7]?.trim()];
    if (status !== 'ready') return null;
    const host = socketDir !== '' ? socketDir : listen;
    return { url: storeUrl(readPassword(dataDir), host, port), pid: holder };
  } catch {
    return null;
  }
}
