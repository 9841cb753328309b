// Entry point: `npm start` runs this file. The cluster primary and every
// worker start here; which role a process has decides what runs.
import cluster from 'node:cluster';
import { ConfigError, loadConfig } from './config/load.js';
import { runPrimary } from './cluster/primary.js';
import { runWorker } from './cluster/worker.js';

function fail(err: unknown): never {
  const line = err instanceof ConfigError ? err.message : `tollgate: cannot start: ${(err as Error)?.stack ?? String(err)}`;
  process.stderr.write(line + '\n');
  process.exit(1);
}

let config;
try {
  config = loadConfig();
} catch (err) {
  fail(err);
}
(cluster.isPrimary ? runPrimary(config) : runWorker(config)).catch(fail);
