// What the request log line and the usage counters cost a call, on the worker's
// event loop: the line as it was before issue 37 (7 fields, pino walking an
// object), as issue 37 first wrote it (21 fields, the same way), and as it is
// written now (the same 21 fields as JSON from prebuilt fragments,
// log/request-line.ts); the six usage counters as series names looked up in a
// Map per call, and as cells kept per label set. Lines go through the real
// LineWriter to /dev/null, one write(2) per 64 lines (a busy worker's turn).
// Run: npx tsc -p . && node dist/bench/micro/request-line.js
import { openSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { pino } from 'pino';
import { LineWriter } from '../../src/log/line-writer.js';
import { InfoLines, jsonString, markPlain } from '../../src/log/request-line.js';
import { Metrics } from '../../src/metrics/registry.js';

const logger = pino(
  { level: 'info', base: { pid: process.pid, role: 'worker' }, redact: { paths: ['authorization', 'secret', 'key', 'body', 'prompt', 'messages', 'input'], remove: true } },
  new LineWriter(openSync('/dev/null', 'w')),
);
markPlain(logger);
const lines = InfoLines.of(logger)!;

const ctx = { requestId: 'req_01JDQ8Z3K4M5N6P7Q8R9S0T1U2', method: 'POST', path: '/v1/chat/completions', status: 200, orgId: 'org_5f3c2a9e', keyId: 'key_9a8b7c6d' };
const u = { outcome: 'completed', inputTokens: 12, cachedInputTokens: 0, outputTokens: 7, imageUnits: 0, chargedMicros: 123, meteredSource: 'supplier' };
const round1 = (ms: number): number => Math.round(ms * 10) / 10;
const modelMember = ',"model":' + jsonString('nw-swift-1');
const routeMember = ',"supplier":' + jsonString('simulator') + ',"route":' + jsonString('swift-1');

function before(i: number): void {
  logger.info({ rid: ctx.requestId, method: ctx.method, path: ctx.path, status: ctx.status, ms: round1(i), org: ctx.orgId, key_id: ctx.keyId }, 'request');
}

function issue37(i: number): void {
  const line: Record<string, unknown> = { rid: ctx.requestId, method: ctx.method, path: ctx.path, status: ctx.status, ms: round1(i), org: ctx.orgId, key_id: ctx.keyId };
  line.model = 'nw-swift-1';
  line.supplier = 'simulator';
  line.route = 'swift-1';
  line.attempts = 1;
  line.reserve_ms = round1(i * 0.1);
  line.supplier_ttfb_ms = round1(i * 0.3);
  line.outcome = u.outcome;
  line.input_tokens = u.inputTokens;
  line.cached_input_tokens = u.cachedInputTokens;
  line.output_tokens = u.outputTokens;
  line.image_units = u.imageUnits;
  line.charged_micros = u.chargedMicros;
  line.metered_source = u.meteredSource;
  logger.info(line, 'request');
}

function now(i: number): void {
  let call = modelMember + routeMember + ',"attempts":' + 1 + ',"reserve_ms":' + round1(i * 0.1) + ',"supplier_ttfb_ms":' + round1(i * 0.3);
  call +=
    ',"outcome":' + jsonString(u.outcome) + ',"input_tokens":' + u.inputTokens + ',"cached_input_tokens":' + u.cachedInputTokens + ',"output_tokens":' + u.outputTokens +
    ',"image_units":' + u.imageUnits + ',"charged_micros":' + u.chargedMicros + ',"metered_source":' + jsonString(u.meteredSource);
  if (lines.enabled) {
    lines.write(
      '"rid":' + jsonString(ctx.requestId) + ',"method":' + jsonString(ctx.method) + ',"path":' + jsonString(ctx.path) + ',"status":' + ctx.status + ',"ms":' + round1(i) +
        ',"org":' + jsonString(ctx.orgId) + ',"key_id":' + jsonString(ctx.keyId) + call,
      '"request"',
    );
  }
}

const metrics = new Metrics();
const names = ['usage_calls', 'usage_input_tokens', 'usage_cached_input_tokens', 'usage_output_tokens', 'usage_image_units', 'usage_charged_micros'].map((n) => n + '{model="nw-swift-1",surface="chat",outcome="completed"}');
const cells = names.map((n) => metrics.seriesCell(n));

function countersByName(): void {
  metrics.countSeries(names[0]!, 1);
  metrics.countSeries(names[1]!, u.inputTokens);
  metrics.countSeries(names[2]!, u.cachedInputTokens);
  metrics.countSeries(names[3]!, u.outputTokens);
  metrics.countSeries(names[4]!, u.imageUnits);
  metrics.countSeries(names[5]!, u.chargedMicros);
  metrics.countSeries(`billing_reserved_micros{surface="${'chat'}"}`, 1234);
}

function countersByCell(): void {
  cells[0]!.value += 1;
  cells[1]!.value += u.inputTokens;
  cells[2]!.value += u.cachedInputTokens;
  cells[3]!.value += u.outputTokens;
  cells[4]!.value += u.imageUnits;
  cells[5]!.value += u.chargedMicros;
  cells[0]!.value += 0; // billing_reserved_micros: one more cell
}

/** ns per call; every 64 calls the event loop turns, so the LineWriter writes as in a worker. */
async function nsPerCall(fn: (i: number) => void, n: number): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < n; i++) {
    fn(i * 0.013);
    if ((i & 63) === 63) await new Promise((r) => setImmediate(r));
  }
  return ((performance.now() - start) * 1e6) / n;
}

const cases: Array<[string, (i: number) => void]> = [
  ['log line before issue 37 (7 fields, pino)', before],
  ['log line, issue 37 as merged (21, pino)', issue37],
  ['log line now (21 fields as JSON)', now],
  ['usage counters by name (Map per call)', countersByName],
  ['usage counters by cell', countersByCell],
];
console.log('ns per call (median of 7 runs of 100k, the cases interleaved)');
const runs = new Map<string, number[]>(cases.map(([name]) => [name, []]));
for (const [, fn] of cases) await nsPerCall(fn, 50_000);
for (let r = 0; r < 7; r++) for (const [name, fn] of cases) runs.get(name)!.push(await nsPerCall(fn, 100_000));
for (const [name, ns] of runs) {
  ns.sort((a, b) => a - b);
  console.log(`${name.padEnd(44)} ${ns[3]!.toFixed(0).padStart(6)}   (${ns[0]!.toFixed(0)}–${ns[6]!.toFixed(0)})`);
}
