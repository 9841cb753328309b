// Entry point: `npm start` runs this file. The cluster primary and every
// worker start here; which role a process has decides what runs.
import cluster from 'node:cluster';
import { ConfigError, loadConfig } from './config/load.js';

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
// Each role loads only its own modules: a worker never runs the embedded store or the simulator, nor the primary the HTTP pipeline.
(cluster.isPrimary ? import('./cluster/primary.js').then((m) => m.runPrimary(config)) : import('./cluster/worker.js').then((m) => m.runWorker(config))).catch(fail);
