// Configuration: config/default.json, then an optional file named by
// TOLLGATE_CONFIG, then environment variables; validated against
// config/schema.json and frozen. A bad value stops the start with one line
// naming the setting.
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { Ajv } from 'ajv';
import { proxySet } from './client-address.js';
import { configDir } from './paths.js';
import type { Config } from './types.js';
import { parseClusterUrl } from './cluster-url.js';
import { parseSentinelUrl } from './sentinel-url.js';

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
  ['TRUSTED_PROXIES', 'http.trusted_proxies'],
  ['OPS_HOST', 'ops.host'],
  ['OPS_PORT', 'ops.port'],
  ['OTLP_TRACES_URL', 'tracing.otlp_url'],
  ['TRACE_SAMPLE_RATIO', 'tracing.sample_ratio'],
  ['TRACE_MAX_QUEUE', 'tracing.max_queue'],
  ['PG_POOL_MAX', 'pools.pg_max'],
  ['PISCINA_MIN_THREADS', 'pools.piscina_min_threads'],
  ['PISCINA_MAX_THREADS', 'pools.piscina_max_threads'],
  ['PISCINA_NICE', 'pools.piscina_nice'],
  ['OFFLOAD_BODY_BYTES', 'pools.offload_body_bytes'],
  ['HEAP_SEMI_SPACE_MB', 'memory.semi_space_mb'],
  ['HEAP_GROWING_PERCENT', 'memory.heap_growing_percent'],
  ['HEAP_MEMORY_REDUCER', 'memory.reducer'],
  ['BILLING_FLUSH_MS', 'billing.flush_ms'],
  ['JOURNAL_MAX_LAG_MS', 'billing.journal_max_lag_ms'],
  ['HOLD_LEASE_MS', 'billing.hold_lease_ms'],
  ['QUOTA_PER_SECOND', 'billing.quota_per_second'],
  ['QUOTA_PER_MINUTE', 'billing.quota_per_minute'],
  ['MAX_CONCURRENT_PER_KEY', 'billing.max_concurrent_per_key'],
  ['COUNT_TOKENS_PER_SECOND', 'billing.count_tokens_per_second'],
  ['COUNT_TOKENS_PER_MINUTE', 'billing.count_tokens_per_minute'],
  ['ALLOTMENT_CALLS', 'billing.allotment_calls'],
  ['CURRENCY', 'billing.currency'],
  ['CATALOG_REFRESH_MS', 'catalog.refresh_ms'],
  ['SIMULATOR_URL', 'simulator.url'],
  ['SIMULATOR_PORT', 'simulator.port'],
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

/** Settings given in the environment as comma-separated lists. */
const ENV_LISTS = new Set(['http.trusted_proxies']);

/** Settings given in the environment as true/false (or 1/0). */
const ENV_BOOLEANS = new Set(['memory.reducer']);

/** Env strings become numbers where they look like numbers (lists split on commas, true/false for booleans), so the schema judges them. */
function envValue(raw: string, path: string): unknown {
  if (ENV_LISTS.has(path)) return raw.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (ENV_BOOLEANS.has(path) && /^(true|1|false|0)$/.test(raw)) return raw === 'true' || raw === '1';
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
    setPath(tree, path, envValue(raw, path));
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
  if (config.redis_url?.startsWith('redis-sentinel://') || config.redis_url?.startsWith('redis-cluster://')) {
    try {
      if (config.redis_url.startsWith('redis-sentinel://')) parseSentinelUrl(config.redis_url);
      else parseClusterUrl(config.redis_url);
    } catch (err) {
      throw new ConfigError(`config: redis_url ${(err as Error).message}${fromEnv.has('/redis_url') ? ' (from REDIS_URL)' : ''}`);
    }
  }
  // Every row waits up to flush_ms by design: a bound under twice that would hold reservations back on a healthy store.
  const b = config.billing;
  if (b.journal_max_lag_ms < 2 * b.flush_ms) {
    throw new ConfigError(`config: billing.journal_max_lag_ms (${b.journal_max_lag_ms}) must be at least twice billing.flush_ms (${b.flush_ms})`);
  }
  try {
    proxySet(config.http.trusted_proxies);
  } catch (err) {
    throw new ConfigError(`config: http.trusted_proxies ${(err as Error).message}${fromEnv.has('/http/trusted_proxies') ? ' (from TRUSTED_PROXIES)' : ''}`);
  }
  if (config.workers === 0) config.workers = availableParallelism();
  config.data_dir = resolve(config.data_dir);
  return deepFreeze(config);
}
