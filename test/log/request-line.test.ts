// The request log line written as JSON (src/log/request-line.ts, the call's
// members from pipeline/call.ts logJson) must be the line pino writes for the
// same fields: the same members in the same order, the same escaping. Each
// check here compares the two paths, so a field added to one and not the
// other, or a value written differently, fails.
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import t, { type Test } from 'tap';
import type { CatalogModel, Route } from '../../src/catalog/types.js';
import type { UsageRow } from '../../src/ledger/protocol.js';
import { LineWriter } from '../../src/log/line-writer.js';
import { createLogger } from '../../src/log/logger.js';
import { InfoLines, jsonString, markPlain } from '../../src/log/request-line.js';
import type { CallTrace, Tracer } from '../../src/metrics/tracing.js';
import { ModelCall } from '../../src/pipeline/call.js';
import type { PipelineDeps } from '../../src/pipeline/deps.js';
import type { RequestContext } from '../../src/server/context.js';
import type { ModelSurface } from '../../src/surfaces/surface.js';

const withoutTime = (line: string): string => line.replace(/"time":\d+/, '"time":0');

function fileLogger(t: Test): { logger: pino.Logger; read: () => string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'request-line-'));
  const path = join(dir, 'out.log');
  const fd = openSync(path, 'w');
  t.teardown(() => {
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  });
  const writer = new LineWriter(fd);
  // As createLogger makes it (which writes to standard output, where tap reads).
  const logger = pino({ level: 'info', base: { pid: 4242, role: 'worker' }, redact: { paths: ['authorization', 'secret', 'key', 'body', 'prompt', 'messages', 'input'], remove: true } }, writer);
  return {
    logger,
    read: () => {
      writer.flush();
      return readFileSync(path, 'utf8').split('\n').filter((l) => l !== '');
    },
  };
}

t.test('a line written as JSON is the line pino writes for the same fields', async (t) => {
  const { logger, read } = fileLogger(t);
  t.equal(InfoLines.of(logger), null, 'a logger createLogger did not make is not written to as JSON');
  t.not(InfoLines.of(createLogger('info', 'test')), null, "createLogger's loggers (the workers') are");
  markPlain(logger);
  const lines = InfoLines.of(logger)!;
  t.ok(lines.enabled, 'info is on');
  const paths = ['/v1/chat/completions', '/v1/"quoted"\\back', '/ctl\u0001char', '/é/ü/☃', 'x'.repeat(150)];
  for (const path of paths) {
    const fields = { rid: 'req_1', method: 'POST', path, status: 200, ms: 4.2, org: null, key_id: 'key_1', attempts: 2 };
    logger.info(fields, 'request');
    lines.write('"rid":' + jsonString(fields.rid) + ',"method":' + jsonString(fields.method) + ',"path":' + jsonString(path) + ',"status":200,"ms":4.2,"org":null,"key_id":"key_1","attempts":2', '"request"');
  }
  const out = read();
  t.equal(out.length, paths.length * 2);
  for (let i = 0; i < out.length; i += 2) t.equal(withoutTime(out[i + 1]!), withoutTime(out[i]!), `same line for path ${JSON.stringify(paths[i / 2]).slice(0, 40)}`);
  logger.level = 'warn';
  t.notOk(lines.enabled, 'the level is read at each line');
});

const route = { supplier: { name: 'sim "one"' }, upstreamModel: 'swift-1' } as unknown as Route;
const model = { canonicalName: 'nw-swift-1' } as unknown as CatalogModel;
const usage = { outcome: 'completed', inputTokens: 12, cachedInputTokens: 3, outputTokens: 7, imageUnits: 0, chargedMicros: 123, meteredSource: 'supplier' } as UsageRow;

function callWith(tracer: Tracer | null): ModelCall {
  const ctx = { traceparent: '', startedAt: 0, call: null, onAbort: null } as unknown as RequestContext;
  return new ModelCall(ctx, 'chat', {} as ModelSurface, { tracer } as unknown as PipelineDeps);
}

t.test("a call's JSON members are logFields' fields, in its order", async (t) => {
  const states: Array<[string, (c: ModelCall) => void]> = [
    ['refused before a model was known', () => {}],
    ['a model, no supplier yet', (c) => (c.model = model)],
    [
      'answered and settled',
      (c) => {
        c.model = model;
        c.supplier = route.supplier.name;
        c.route = route;
        c.attempts = 2;
        c.reserveMs = 0.4321;
        c.supplierTtfbMs = 12.06;
        c.usage = usage;
      },
    ],
    [
      'settled with no metered source',
      (c) => {
        c.model = model;
        c.usage = { ...usage, meteredSource: null, outcome: 'failed' };
      },
    ],
  ];
  for (const [what, fill] of states) {
    const call = callWith(null);
    fill(call);
    const fields: Record<string, unknown> = {};
    call.logFields(fields);
    const json = call.logJson()!;
    t.equal(json === '' || json.startsWith(','), true, `${what}: members led by a comma`);
    const parsed = JSON.parse('{' + json.slice(1) + '}') as Record<string, unknown>;
    t.same(Object.keys(parsed), Object.keys(fields), `${what}: same keys, same order`);
    t.strictSame(parsed, fields, `${what}: same values`);
  }
});

t.test('a traced call gives no JSON: its span reads the fields as an object', async (t) => {
  let ended: Readonly<Record<string, unknown>> | null = null;
  const trace = { stage() {}, attemptStart: () => '', attemptEnd() {}, end: (line: Readonly<Record<string, unknown>>) => (ended = line) } as CallTrace;
  const call = callWith({ startCall: () => trace, shutdown: async () => {} });
  call.model = model;
  t.equal(call.logJson(), null);
  const fields: Record<string, unknown> = {};
  call.logFields(fields);
  t.equal(ended, fields, 'logFields still ends the span with the line');
});
