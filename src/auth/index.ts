// The auth module as a worker starts it: the live-key index and its sync, the
// authenticator the pipeline calls (GET /v1/key is a surface: surfaces/key/route.ts).
import type { ChangeBus } from '../bus/bus.js';
import type { Logger } from '../log/logger.js';
import type { Metrics } from '../metrics/registry.js';
import type { Pool } from '../store/pool.js';
import { KeyAuthenticator } from './authenticator.js';
import { LiveKeyIndex } from './key-index.js';
import { KeySync } from './key-sync.js';

export { KeyAuthenticator } from './authenticator.js';
export { scopeAllows } from './scope.js';

export interface AuthDeps {
  pool: Pool;
  bus: ChangeBus;
  metrics: Metrics;
  logger: Logger;
}

export interface AuthModule {
  authenticator: KeyAuthenticator;
  /** Applies the change log now; resolves when this worker's index is current. */
  catchUp(): Promise<void>;
  stop(): void;
}

export async function startAuth(deps: AuthDeps): Promise<AuthModule> {
  const index = new LiveKeyIndex();
  const authenticator = new KeyAuthenticator(deps.pool, index, deps.metrics, deps.logger);
  const sync = new KeySync(deps.pool, index, (hash) => authenticator.forget(hash), deps.logger);
  await sync.start();
  // The payload (a key id) is not needed: the change log says what changed.
  deps.bus.subscribe('keys', () => void sync.pollNow());
  // While notices reach this worker its timed poll is only a safety net (key-sync.ts).
  deps.bus.watch?.((listening) => sync.setNotified(listening));
  return { authenticator, catchUp: () => sync.catchUp(), stop: () => sync.stop() };
}
