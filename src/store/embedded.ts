// The embedded default: PGlite persisted under data_dir, opened by the cluster
// primary (only one process may open a data directory) and served to every
// process's pg Pool over pglite-socket on loopback.
//
// pglite-socket runs every connection through one PGlite session with a query
// queue: a transaction on one connection holds the others, so no code may wait
// on a second connection inside a transaction, and NOTIFY does not cross
// connections (change notifications travel over cluster IPC instead).
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';

export interface EmbeddedStore {
  url: string;
  close(): Promise<void>;
}

const LOCK_FILE = 'gateway.lock';
export const STORE_FILE = 'store.json';

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Refuses a second gateway (or a CLI opening PGlite directly) on the same data directory. */
export function lockDataDir(dataDir: string): () => void {
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, LOCK_FILE);
  try {
    const holder = Number(readFileSync(path, 'utf8'));
    if (holder !== process.pid && pidAlive(holder)) {
      throw new Error(`data directory ${dataDir} is in use by process ${holder}`);
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  writeFileSync(path, String(process.pid));
  return () => rmSync(path, { force: true });
}

/** Where a running gateway serves its embedded store, for the `tollgate` command. */
export function readStoreFile(dataDir: string): { url: string; pid: number } | null {
  try {
    const info = JSON.parse(readFileSync(join(dataDir, STORE_FILE), 'utf8')) as { url: string; pid: number };
    return pidAlive(info.pid) ? info : null;
  } catch {
    return null;
  }
}

export async function openEmbeddedStore(dataDir: string, maxConnections: number): Promise<EmbeddedStore> {
  const unlock = lockDataDir(dataDir);
  const db = await PGlite.create(join(dataDir, 'pgdata'));
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections });
  await server.start();
  const url = `postgres://postgres@${server.getServerConn()}/postgres`;
  writeFileSync(join(dataDir, STORE_FILE), JSON.stringify({ url, pid: process.pid }));
  return {
    url,
    async close() {
      rmSync(join(dataDir, STORE_FILE), { force: true });
      await server.stop();
      await db.close();
      unlock();
    },
  };
}
