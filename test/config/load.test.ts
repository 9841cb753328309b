import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { packageRoot } from '../../src/config/paths.js';

t.test('defaults load and are frozen; workers 0 means one per core', async (t) => {
  const c = loadConfig({});
  t.equal(c.port, 8080);
  t.ok(c.workers >= 1);
  t.equal(c.database_url, null);
  t.ok(Object.isFrozen(c.http));
});

t.test('environment overrides, numbers coerced', async (t) => {
  const c = loadConfig({ PORT: '9001', WORKERS: '3', DATABASE_URL: 'postgres://x@h/db', PG_POOL_MAX: '5', LOG_LEVEL: 'warn' });
  t.equal(c.port, 9001);
  t.equal(c.workers, 3);
  t.equal(c.database_url, 'postgres://x@h/db');
  t.equal(c.pools.pg_max, 5);
  t.equal(c.log_level, 'warn');
});

t.test('SIMULATOR_URL points at a running simulator and stops the embedded one', async (t) => {
  const c = loadConfig({ SIMULATOR_URL: 'http://127.0.0.1:7071' });
  t.equal(c.simulator.url, 'http://127.0.0.1:7071');
  t.equal(c.simulator.enabled, false);
});

t.test('a bad value names the setting and the variable', async (t) => {
  t.throws(() => loadConfig({ WORKERS: 'many' }), new ConfigError('config: workers must be integer (from WORKERS)'));
  t.throws(() => loadConfig({ PORT: '70000' }), /config: port must be <= 65535 \(from PORT\)/);
  t.throws(() => loadConfig({ DATABASE_URL: 'mysql://x' }), /config: database_url .*\(from DATABASE_URL\)/);
});

t.test('the lag bound of the journal must leave room for the flush interval', async (t) => {
  t.throws(() => loadConfig({ BILLING_FLUSH_MS: '1500' }), new ConfigError('config: billing.journal_max_lag_ms (1000) must be at least twice billing.flush_ms (1500)'));
  t.equal(loadConfig({ BILLING_FLUSH_MS: '1500', JOURNAL_MAX_LAG_MS: '3000' }).billing.journal_max_lag_ms, 3000);
});

t.test('TOLLGATE_CONFIG file merges over the defaults; an unknown setting is refused', async (t) => {
  const dir = t.testdir({});
  const good = join(dir, 'good.json');
  writeFileSync(good, JSON.stringify({ http: { drain_timeout_ms: 1234 } }));
  const c = loadConfig({ TOLLGATE_CONFIG: good });
  t.equal(c.http.drain_timeout_ms, 1234);
  t.equal(c.http.max_body_bytes, 8388608, 'siblings kept');
  const bad = join(dir, 'bad.json');
  writeFileSync(bad, JSON.stringify({ http: { drain_timeout: 5 } }));
  t.throws(() => loadConfig({ TOLLGATE_CONFIG: bad }), /config: http must NOT have additional properties \(drain_timeout\)/);
});

t.test('the process refuses to start on a bad value: one line, non-zero exit', async (t) => {
  const r = spawnSync(process.execPath, [join(packageRoot, 'dist/src/main.js')], { env: { ...process.env, WORKERS: 'abc' }, encoding: 'utf8', timeout: 20_000 });
  t.not(r.status, 0);
  t.equal(r.stderr.trim(), 'config: workers must be integer (from WORKERS)');
});

t.test('memory: V8 heap sizing of the workers, from the file or the environment, bounded', async (t) => {
  const d = loadConfig({});
  t.same(d.memory, { semi_space_mb: 8, heap_growing_percent: 100, reducer: false });
  const c = loadConfig({ HEAP_SEMI_SPACE_MB: '0', HEAP_GROWING_PERCENT: '50', HEAP_MEMORY_REDUCER: 'true' });
  t.same(c.memory, { semi_space_mb: 0, heap_growing_percent: 50, reducer: true });
  t.equal(loadConfig({ HEAP_MEMORY_REDUCER: '0' }).memory.reducer, false);
  t.throws(() => loadConfig({ HEAP_MEMORY_REDUCER: 'yes' }), /memory\.reducer/);
  t.throws(() => loadConfig({ HEAP_SEMI_SPACE_MB: '65' }), /config: memory\.semi_space_mb must be <= 64 \(from HEAP_SEMI_SPACE_MB\)/);
  t.throws(() => loadConfig({ HEAP_GROWING_PERCENT: '-1' }), /config: memory\.heap_growing_percent must be >= 0 \(from HEAP_GROWING_PERCENT\)/);
});
