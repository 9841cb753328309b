// The shape of config/schema.json, as the code sees it after loading.
export interface Config {
  host: string;
  port: number;
  /** HTTP worker processes (0 in the file means one per core; resolved at load). */
  workers: number;
  database_url: string | null;
  redis_url: string | null;
  admin_token: string | null;
  log_level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  data_dir: string;
  http: {
    max_body_bytes: number;
    max_json_depth: number;
    drain_timeout_ms: number;
    stalled_client_ms: number;
    /** Proxies (addresses or CIDR blocks) whose X-Forwarded-For names the client (config/client-address.ts); empty = the socket's peer. */
    trusted_proxies: string[];
  };
  /** The operator listener (GET /metrics), served by the primary: loopback by default; port 0 or null = none. */
  ops: { host: string; port: number | null };
  /** OpenTelemetry traces over OTLP/HTTP (metrics/otel.ts), loaded only when otlp_url is set. */
  tracing: { otlp_url: string | null; sample_ratio: number; max_queue: number };
  pools: { pg_max: number; piscina_min_threads: number; piscina_max_threads: number; piscina_nice: number; offload_body_bytes: number };
  /** V8 heap sizing of the HTTP worker processes (and so of their pool threads): 0 = V8's default. */
  memory: { semi_space_mb: number; heap_growing_percent: number; reducer: boolean };
  billing: {
    flush_ms: number;
    /** Past this lag of the journal, new reservations wait for the store (src/ledger/ledger.ts, reserve). */
    journal_max_lag_ms: number;
    hold_lease_ms: number;
    hold_max_ms: number;
    quota_per_second: number;
    quota_per_minute: number;
    /** Model calls in progress per key, per HTTP worker. */
    max_concurrent_per_key: number;
    /** count_tokens' own quota per organization, per HTTP worker (pipeline/local-quota.ts). */
    count_tokens_per_second: number;
    count_tokens_per_minute: number;
    /** Embedded ledger: calls' worth of money and admissions a worker holds in advance (src/ledger/allotments.ts); 0 = none. */
    allotment_calls: number;
    /** Decimal string, e.g. "25.00". */
    demo_balance: string;
    currency: string;
  };
  responses: { owner_cache_entries: number; owner_cache_max_age_ms: number; owner_flush_ms: number };
  catalog: { refresh_ms: number; seed_demo: boolean; typical_refresh_ms: number; typical_window_days: number };
  simulator: { enabled: boolean; url: string | null; port: number; instances: string[] };
  suppliers: {
    connect_timeout_ms: number;
    headers_timeout_ms: number;
    body_timeout_ms: number;
    connections_per_origin: number;
    breaker_threshold: number;
    breaker_cooldown_ms: number;
    /** Names a catalog's credential_env may use besides the TOLLGATE_SUPPLIER_ prefix. */
    credential_env_allow: string[];
    max_reply_bytes: number;
    max_event_bytes: number;
  };
  web: {
    /** How long a console session lives after sign-in. */
    session_ttl_ms: number;
    /** Sign-in tries per account and client address together (4× per address alone) within the window before further tries are refused. */
    sign_in_max_failures: number;
    sign_in_window_ms: number;
    /** Secure on the session cookie: auto = when the request came over TLS (X-Forwarded-Proto: https from a proxy). */
    cookie_secure: 'auto' | 'always' | 'never';
  };
}
