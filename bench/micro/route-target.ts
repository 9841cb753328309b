// What one supplier attempt spends working out where and how to call: the
// upstream URL, the headers and the credential. Before issue 13 every attempt
// built them (new URL, wire.headers(), a credential cache lookup); now they
// are computed once per catalog revision per route (suppliers/targets.ts) and
// an attempt does one WeakMap lookup. "before" below is the old per-attempt
// code, copied verbatim apart from the names.
// Run: npx tsc -p . && node dist/bench/micro/route-target.js
import { performance } from 'node:perf_hooks';
import { CredentialPolicy } from '../../src/catalog/credentials.js';
import type { Route, Supplier } from '../../src/catalog/types.js';
import { RouteTargets } from '../../src/suppliers/targets.js';
import { credentialOf, REFUSED, wireFor } from '../../src/suppliers/wire.js';

process.env.TOLLGATE_SUPPLIER_BENCH = 'sk-bench-0123456789';
const policy = new CredentialPolicy([]);
const supplier: Supplier = {
  id: 's', name: 'bench', wireProtocol: 'openai-compatible', baseUrl: 'http://127.0.0.1:8080/bench/v1', credentialEnv: 'TOLLGATE_SUPPLIER_BENCH', protocols: ['chat_completions'],
};
const route: Route = { supplier, upstreamModel: 'm', priority: 1 };
let sink = 0;

const credentialCache = new WeakMap<Supplier, string | null | typeof REFUSED>();
function before(r: Route): void {
  const wire = wireFor(r.supplier.wireProtocol);
  const url = new URL(r.supplier.baseUrl + wire.path('chat_completions')!);
  let credential = credentialCache.get(r.supplier);
  if (credential === undefined) {
    credential = credentialOf(r.supplier, policy);
    credentialCache.set(r.supplier, credential);
  }
  if (credential === REFUSED) return;
  const path = url.pathname + url.search;
  const headers = wire.headers(credential);
  sink += url.origin.length + path.length + (headers.authorization?.length ?? 0);
}

const targets = new RouteTargets(policy);
function after(r: Route): void {
  const t = targets.of(r, 'chat_completions');
  if (t === REFUSED) return;
  sink += t.origin.length + t.path.length + (t.headers.authorization?.length ?? 0);
}

function nsPerAttempt(fn: (r: Route) => void, n: number): number {
  const start = performance.now();
  for (let i = 0; i < n; i++) fn(route);
  return ((performance.now() - start) * 1e6) / n;
}

console.log('ns per attempt (median of 5 runs of 200k)');
for (const [name, fn] of [['before: built per attempt', before], ['after: once per revision per route', after]] as const) {
  nsPerAttempt(fn, 50_000);
  const runs = Array.from({ length: 5 }, () => nsPerAttempt(fn, 200_000)).sort((a, b) => a - b);
  console.log(`${name.padEnd(36)} ${runs[2]!.toFixed(0)}`);
}
if (sink === 0) console.log('');
