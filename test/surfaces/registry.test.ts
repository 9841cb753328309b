// The registry (src/surfaces/index.ts) is the one list of surfaces: this test
// walks it and proves, for every entry, that the pool runs its preparer (or
// its local decoder) with the same result as inline, that a real gateway
// routes it and answers a body larger than pools.offload_body_bytes (parsed
// in the pool) correctly, and that an unknown path under its prefix answers
// 404 in its envelope. It also holds the rest of "one folder plus one
// registry line": every folder under src/surfaces/ is an entry (or one of the
// two GET surfaces routed beside the list), the README's surface table names
// every path, and what the pool imports through the registry is pure.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import t from 'tap';
import { packageRoot } from '../../src/config/paths.js';
import type { EnvelopeKind } from '../../src/errors/envelopes.js';
import { localOperationNamed, modelCallNamed, pathOf, SURFACES, type SurfaceEntry } from '../../src/surfaces/index.js';
import { WIRES } from '../../src/suppliers/wire.js';
import { surfacePrefix } from '../../src/surfaces/surface.js';
import decodeLocal from '../../workers/decode-local.js';
import prepareRequest from '../../workers/prepare-request.js';
import { chatEnvelopeFault, embeddingsEnvelopeFault, imagesEnvelopeFault, messagesEnvelopeFault, restEnvelopeFault } from '../helpers/envelopes.js';
import { startGateway } from '../helpers/gateway.js';
import { ADMIN_TOKEN, organization, provision, usageRowsAtLeast } from '../helpers/provision.js';
import { testDatabase } from '../helpers/services.js';

const OFFLOAD_BODY_BYTES: number = JSON.parse(readFileSync(join(packageRoot, 'config/default.json'), 'utf8')).pools.offload_body_bytes;
/** GET surfaces answered from the worker's own state, routed beside the list (src/pipeline/routes.ts). */
const BESIDE_THE_LIST = ['key', 'models'];

/** The entry's example, larger than the offload threshold. */
function largeBody(entry: SurfaceEntry): Buffer {
  const body = Buffer.from(JSON.stringify(entry.example('many words '.repeat(Math.ceil((OFFLOAD_BODY_BYTES * 1.5) / 11)))));
  if (body.length <= OFFLOAD_BODY_BYTES) throw new Error(`${entry.name}: example of ${body.length} bytes`);
  return body;
}

const ENVELOPE_FAULT: Record<Exclude<EnvelopeKind, 'rest'>, (body: any) => string | null> = {
  openai: chatEnvelopeFault,
  messages: messagesEnvelopeFault,
  embeddings: embeddingsEnvelopeFault,
  images: imagesEnvelopeFault,
};

function envelopeOf(entry: SurfaceEntry): EnvelopeKind {
  return entry.role === 'model_call' ? entry.surface.envelope : entry.operation.envelope;
}

t.test('every entry has a pool preparer (or local decoder) that agrees with the inline one on a large body', async (t) => {
  for (const entry of SURFACES) {
    const bytes = largeBody(entry);
    const parsed = JSON.parse(bytes.toString());
    if (entry.role === 'model_call') {
      t.equal(modelCallNamed(entry.name), entry.surface, `${entry.name}: the pool finds it by name`);
      const pooled = prepareRequest({ surface: entry.name, body: new Uint8Array(bytes), maxDepth: 64 });
      t.same(pooled, { ok: true, prepared: entry.surface.prepare(parsed, bytes.length) }, `${entry.name}: pool = inline`);
      if (entry.surface.stream === undefined) {
        const refused = prepareRequest({ surface: entry.name, body: new Uint8Array(Buffer.from(JSON.stringify({ ...parsed, stream: true }))), maxDepth: 64 });
        t.match(refused, { ok: false, code: 'invalid_request', param: 'stream', message: /^`stream` is not a member/ }, `${entry.name}: no transcoder, so stream is refused by name`);
      }
    } else {
      t.equal(localOperationNamed(entry.name), entry.operation, `${entry.name}: the pool finds it by name`);
      const pooled = await decodeLocal({ operation: entry.name, body: new Uint8Array(bytes), maxDepth: 64 });
      t.ok(pooled.ok, `${entry.name}: the pool decodes it`);
    }
  }
});

t.test('one folder, one entry: every folder under src/surfaces/ is registered', async (t) => {
  const folders = readdirSync(join(packageRoot, 'src/surfaces'), { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name);
  const names = new Set(SURFACES.map((e) => e.name.replaceAll('_', '-')));
  for (const folder of folders) t.ok(names.has(folder) || BESIDE_THE_LIST.includes(folder), `src/surfaces/${folder} is a registry entry`);
  for (const name of names) t.ok(folders.includes(name), `entry ${name} has its folder`);
});

t.test("the README's surface table names every registered path", async (t) => {
  const readme = readFileSync(join(packageRoot, 'README.md'), 'utf8');
  const table = readme.slice(readme.indexOf('| Surface | Path |'));
  for (const entry of SURFACES) t.match(table.slice(0, table.indexOf('\n\n')), `\`POST ${pathOf(entry)}\``, entry.name);
});

t.test('a new wire is one folder plus one line of ADAPTERS: the catalog schema lists exactly the wires the gateway speaks', async (t) => {
  const schema = JSON.parse(readFileSync(join(packageRoot, 'config/catalog.schema.json'), 'utf8'));
  const found: string[][] = [];
  const walk = (node: unknown): void => {
    if (node === null || typeof node !== 'object') return;
    const wire = (node as Record<string, any>).wire_protocol;
    if (wire !== undefined && Array.isArray(wire.enum)) found.push(wire.enum);
    for (const v of Object.values(node)) walk(v);
  };
  walk(schema);
  t.equal(found.length, 1, 'one wire_protocol enum in the schema');
  t.same([...found[0]!].sort(), [...WIRES].sort());
});

/** Value imports (not `import type`) of a TypeScript source, resolved to source paths. */
function valueImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/^(?:import|export)\s+(?!type\b)(?:[^'";]*?\sfrom\s+)?'([^']+)'/gm)) out.push(m[1]);
  return out;
}

t.test('what the pool loads through the registry is pure: no server, pipeline, store, ledger, bus or network module', async (t) => {
  const FORBIDDEN_DIRS = ['server', 'pipeline', 'store', 'ledger', 'bus', 'cluster', 'console', 'offload', 'log'];
  const FORBIDDEN_PACKAGES = ['pg', 'ioredis', 'uWebSockets.js', 'undici', 'pino', 'piscina'];
  const seen = new Set<string>();
  const queue = [join(packageRoot, 'src/surfaces/index.ts')];
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const where = relative(join(packageRoot, 'src'), file);
    t.notOk(FORBIDDEN_DIRS.includes(where.split('/')[0]!), `${where} is not on the pool's side`);
    for (const spec of valueImports(file)) {
      if (spec.startsWith('.')) queue.push(resolve(dirname(file), spec.replace(/\.js$/, '.ts')));
      else t.notOk(FORBIDDEN_PACKAGES.includes(spec), `${where} imports ${spec}`);
    }
  }
  t.ok(seen.size > SURFACES.length, `${seen.size} modules walked`);
});

const db = await testDatabase(t);
if (db !== null) {
  const gw = await startGateway({ env: { DATABASE_URL: db, ADMIN_TOKEN, BILLING_FLUSH_MS: '0' } });
  t.teardown(() => gw.stop());

  t.test(`every entry is routed and answers a body over ${OFFLOAD_BODY_BYTES} bytes (the pool's side) on a real gateway`, async (t) => {
    const { key, orgId } = await provision(gw.url, { balance: '50.00' });
    let calls = 0;
    for (const entry of SURFACES) {
      const res = await fetch(gw.url + pathOf(entry), {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: largeBody(entry),
      });
      const text = await res.text();
      t.equal(res.status, 200, `${entry.name}: 200 (${text.slice(0, 200)})`);
      t.type(JSON.parse(text), 'object', `${entry.name}: a JSON answer`);
      if (entry.role === 'model_call') calls++;
      const rows = await usageRowsAtLeast(gw.url, orgId, calls);
      const row = rows.find((r) => r.request_id === res.headers.get('x-request-id'));
      if (entry.role === 'model_call') t.equal(row?.outcome, 'completed', `${entry.name}: settled as completed`);
      else t.equal(row, undefined, `${entry.name}: a local operation charges nothing`);
    }
    const org = await organization(gw.url, orgId);
    t.equal(org.held, '0.00', 'no hold left');
  });

  t.test("every entry's unknown sub-path answers 404 in its envelope, and its unserved paths too", async (t) => {
    for (const entry of SURFACES) {
      const envelope = envelopeOf(entry);
      const paths = [surfacePrefix(pathOf(entry)) + '/no-such-path', ...(entry.role === 'model_call' ? (entry.unserved ?? []) : [])];
      for (const path of paths) {
        const res = await fetch(gw.url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
        const body = (await res.json()) as any;
        t.equal(res.status, 404, `${entry.name} ${path}: 404`);
        t.equal(envelope === 'rest' ? restEnvelopeFault(body, res.headers.get('x-request-id') ?? undefined) : ENVELOPE_FAULT[envelope](body), null, `${entry.name} ${path}: the ${envelope} envelope`);
      }
    }
  });

  t.test('the metrics label is the entry name (messages and count_tokens apart)', async (t) => {
    const text = await (await fetch(`${gw.opsUrl}/metrics`)).text();
    for (const entry of SURFACES) t.match(text, `tollgate_requests_total{surface="${entry.name}",status="200"}`, entry.name);
  });
}
