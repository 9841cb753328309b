// Configuration: config/default.json, then an optional file named by
// TOLLGATE_CONFIG, then environment variables; validated against
// config/schema.json and frozen. A bad value stops the start with one line
// naming the setting.
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { Ajv } from 'ajv';
import { configDir } from './paths.js';
import type { Config } from './types.js';

/** Environment variable → setting path; the type comes from the schema. */
export const ENV_SETTINGS: ReadonlyArray<readonly [string, string]> = [
  ['HOST', 'host'],
  ['PORT', 'port'],
  ['WORKERS', 'workers'],
  ['DATABASE_URL', 'database_url'],
  ['REDIS_URL', 'redis_url'],
  ['ADMIN_TOKEN', 'admin_token'],
  ['LOG_LEVEL', 'log_level'],
  ['DATA_DIR', 'data_dir'],
  ['MAX_BODY_BYTES', 'http.max_body_bytes'],
  ['MAX_JSON_DEPTH', 'http.max_json_depth'],
  ['DRAIN_TIMEOUT_MS', 'http.drain_timeout_ms'],
  ['STALLED_CLIENT_MS', 'http.stalled_client_ms'],
  ['PG_POOL_MAX', 'pools.pg_max'],
  ['PISCINA_MIN_THREADS', 'pools.piscina_min_threads'],
  ['PISCINA_MAX_THREADS', 'pools.piscina_max_threads'],
  ['PISCINA_NICE', 'pools.piscina_nice'],
  ['OFFLOAD_BODY_BYTES', 'pools.offload_body_bytes'],
  ['HEAP_SEMI_SPACE_MB', 'memory.semi_space_mb'],
  ['HEAP_GROWING_PERCENT', 'memory.heap_growing_percent'],
  ['BILLING_FLUSH_MS', 'billing.flush_ms'],
  ['JOURNAL_MAX_LAG_MS', 'billing.journal_max_lag_ms'],
  ['HOLD_LEASE_MS', 'billing.hold_lease_ms'],
  ['QUOTA_PER_SECOND', 'billing.quota_per_second'],
  ['QUOTA_PER_MINUTE', 'billing.quota_per_minute'],
  ['MAX_CONCURRENT_PER_KEY', 'billing.max_concurrent_per_key'],
  ['ALLOTMENT_CALLS', 'billing.allotment_calls'],
  ['CATALOG_REFRESH_MS', 'catalog.refresh_ms'],
  ['SIMULATOR_URL', 'simulator.url'],
];

export class ConfigError extends Error {}

type Tree = Record<string, unknown>;

function readJson(path: string): Tree {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Tree;
  } catch (err) {
    throw new ConfigError(`config: cannot read ${path}: ${(err as Error).message}`);
  }
}

function merge(base: Tree, over: Tree): Tree {
  const out: Tree = { ...base };
  for (const [k, v] of Object.entries(over)) {
    const b = out[k];
    out[k] =
      v !== null && typeof v === 'object' && !Array.isArray(v) && b !== null && typeof b === 'object' && !Array.isArray(b)
        ? merge(b as Tree, v as Tree)
        : v;
  }
  return out;
}

function setPath(tree: Tree, path: string, value: unknown): void {
  const parts = path.split('.');
  let node = tree;
  for (let i = 0; i < parts.length - 1; i++) node = node[parts[i]] as Tree;
  node[parts[parts.length - 1]] = value;
}

/** Env strings become numbers where they look like numbers, so the schema judges them. */
function envValue(raw: string): unknown {
  return /^-?\d+(\.\d+)?$/.test(raw) ? Number(raw) : raw;
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  let tree = readJson(join(configDir, 'default.json'));
  if (env.TOLLGATE_CONFIG) tree = merge(tree, readJson(resolve(env.TOLLGATE_CONFIG)));
  const fromEnv = new Map<string, string>();
  for (const [name, path] of ENV_SETTINGS) {
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    setPath(tree, path, envValue(raw));
    fromEnv.set('/' + path.replaceAll('.', '/'), name);
  }
  if (env.SIMULATOR_URL) setPath(tree, 'simulator.enabled', false);

  const ajv = new Ajv({ allErrors: false, strict: true });
  const validate = ajv.compile(readJson(join(configDir, 'schema.json')));
  if (!validate(tree)) {
    const e = validate.errors![0];
    const where = e.instancePath === '' ? '(top level)' : e.instancePath.slice(1).replaceAll('/', '.');
    const envName = fromEnv.get(e.instancePath);
    const extra = e.keyword === 'additionalProperties' ? ` (${String(e.params.additionalProperty)})` : '';
    throw new ConfigError(`config: ${where} ${e.message}${extra}${envName ? ` (from ${envName})` : ''}`);
  }
  const config = tree as unknown as Config;
  // Instances share one ledger through Redis only if they also share its store: the embedded PostgreSQL is one machine's.
  if (config.redis_url !== null && config.database_url === null) {
    throw new ConfigError(`config: redis_url needs database_url: every instance sharing a Redis ledger must use the same PostgreSQL${fromEnv.has('/redis_url') ? ' (from REDIS_URL)' : ''}`);
  }
  // Every row waits up to flush_ms by design: a bound under twice that would hold reservations back on a healthy store.
  const b = config.billing;
  if (b.journal_max_lag_ms < 2 * b.flush_ms) {
    throw new ConfigError(`config: billing.journal_max_lag_ms (${b.journal_max_lag_ms}) must be at least twice billing.flush_ms (${b.flush_ms})`);
  }
  if (config.workers === 0) config.workers = availableParallelism();
  config.data_dir = resolve(config.data_dir);
  return deepFreeze(config);
}
