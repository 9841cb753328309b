// Entry point: `npm start` runs this file. The cluster primary and every
// worker start here; which role a process has decides what runs.
import cluster from 'node:cluster';
import { ConfigError, loadConfig } from './config/load.js';

/** Errors of the machine, not of the program (a port taken, a directory not writable): their message says it all. ELISTEN: uWS could not listen. */
const SYSTEM_ERRORS = new Set(['ELISTEN', 'EADDRINUSE', 'EADDRNOTAVAIL', 'EACCES', 'EPERM', 'ENOSPC']);

function fail(err: unknown): never {
  const line =
    err instanceof ConfigError
      ? err.message
      : SYSTEM_ERRORS.has((err as NodeJS.ErrnoException)?.code ?? '')
        ? `tollgate: cannot start: ${(err as Error).message}`
        : `tollgate: cannot start: ${(err as Error)?.stack ?? String(err)}`;
  process.stderr.write(line + '\n');
  process.exit(1);
}

let config;
try {
  config = loadConfig();
} catch (err) {
  fail(err);
}
// Each role loads only its own modules: a worker never runs the embedded store or the simulator, nor the primary the HTTP pipeline.
(cluster.isPrimary ? import('./cluster/primary.js').then((m) => m.runPrimary(config)) : import('./cluster/worker.js').then((m) => m.runWorker(config))).catch(fail);
