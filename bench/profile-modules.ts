// Names a CPU profile frame by where its code lives: a package under
// node_modules, a folder of Tollgate's src/, a Node core module, or V8 itself;
// then a coarser group the report reads at a glance (uWS, JSON, ajv, auth,
// IPC/ledger, undici, pino, …).
export interface Frame {
  functionName: string;
  url: string;
  lineNumber: number;
}

const V8_SPECIAL: Record<string, string> = {
  '(garbage collector)': 'V8: garbage collector',
  '(program)': 'V8/native (program: outside JS, e.g. uWS and syscalls)',
};

/** Natives JSON.parse/JSON.stringify show as builtins named parse/stringify with no URL. */
const JSON_BUILTINS = new Set(['parse', 'stringify', 'JSONParse', 'JSONStringify', 'JsonParse', 'JsonStringify']);

export function moduleOf(f: Frame): string {
  const special = V8_SPECIAL[f.functionName];
  if (special !== undefined && f.url === '') return special;
  // (root) is nobody's caller: a walk up the stack that reaches it finds no owner.
  if (f.functionName === '(root)') return 'V8 builtin (root)';
  const url = f.url;
  if (url === '') {
    if (JSON_BUILTINS.has(f.functionName)) return 'JSON (builtin)';
    // ajv compiles schemas into functions with no source URL, named validate<N>.
    if (/^validate\d*$/.test(f.functionName)) return 'ajv (compiled validators)';
    return `V8 builtin (${f.functionName || 'anonymous'})`;
  }
  const pkg = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg !== null) return pkg[1]!;
  const own = /\/dist\/(src|workers)\/([^/]+)(\/|\.js)/.exec(url);
  if (own !== null) return own[1] === 'workers' ? 'tollgate workers/' : `tollgate src/${own[2]}`;
  if (url.startsWith('node:')) return url.replace(/^node:(internal\/)?/, 'node:').replace(/\/.*$/, '');
  return url;
}

const GROUPS: Array<[RegExp, string]> = [
  [/uws/i, 'uWS'],
  [/^JSON/, 'JSON'],
  [/^ajv/, 'ajv'],
  [/^tollgate src\/auth$/, 'auth'],
  [/^tollgate src\/(ledger|bus|cluster)$|^node:(child_process|cluster)$/, 'IPC/ledger (cluster messages, actors)'],
  [/^tollgate src\/billing$/, 'billing'],
  [/^undici$/, 'undici'],
  [/^(pino|sonic-boom|thread-stream|pino-std-serializers|fast-redact|quick-format-unescaped|safe-stable-stringify)$/, 'pino (logging)'],
  [/^tollgate src\/(pipeline)$/, 'pipeline'],
  [/^tollgate src\/(surfaces)$/, 'surfaces (chat codec)'],
  [/^tollgate src\/(suppliers)$/, 'suppliers (dispatch, SSE)'],
  [/^tollgate src\/(server)$/, 'server (routing, body, respond)'],
  [/^tollgate src\/(metrics|log)$/, 'metrics + log (own)'],
  [/^tollgate /, 'tollgate (other)'],
  [/^piscina$/, 'piscina'],
  [/^(pg|pg-protocol|pg-pool|pg-types|pgpass|postgres-.*)$/, 'pg client'],
  [/^(ioredis|redis-.*|cluster-key-slot|denque)$/, 'redis client'],
  [/^tollgate src\/(store)$/, 'store (own)'],
  [/^node:(net|stream|streams|internal|buffer|events|timers|async_hooks|process|util|diagnostics_channel|url|perf_hooks)/, 'node core (net, streams, timers, events)'],
  [/^V8: garbage/, 'GC'],
  [/^V8\/native/, 'native (program)'],
  [/^V8 builtin/, 'V8 builtins'],
];

export function groupOf(module: string, f: Frame): string {
  // uWS's JS shim is tiny; its native code shows as (program). Name the uWS callbacks by their caller instead.
  if (f.url.includes('uws-js-unofficial')) return 'uWS';
  for (const [re, name] of GROUPS) if (re.test(module)) return name;
  return module.startsWith('node:') ? 'node core (other)' : 'other';
}
