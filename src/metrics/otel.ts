// OpenTelemetry traces of model calls, loaded only when tracing.otlp_url is
// set (metrics/tracing.ts loadTracer). The official SDK: a BatchSpanProcessor
// with a bounded queue (tracing.max_queue; past it spans are dropped, so a
// collector that is down costs neither latency nor memory past that bound)
// and the OTLP/HTTP JSON exporter. No global context manager: each call's
// context is passed explicitly, so nothing hooks async resources.
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, defaultTextMapGetter, type Context, type Span } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace-base';
import type { CallTrace, Tracer } from './tracing.js';

/** gen_ai.operation.name of each surface (OpenTelemetry GenAI conventions); images have none there. */
const OPERATION: Record<string, string> = {
  chat: 'chat',
  messages: 'chat',
  responses: 'chat',
  embeddings: 'embeddings',
  images: 'generate_content',
};

/** Log line field → span attribute of the call. GenAI names where the conventions have one; ours under tollgate.*. */
const CALL_ATTRIBUTES: ReadonlyArray<readonly [string, string]> = [
  ['model', 'gen_ai.request.model'],
  ['supplier', 'gen_ai.provider.name'],
  ['route', 'gen_ai.response.model'],
  ['input_tokens', 'gen_ai.usage.input_tokens'],
  ['output_tokens', 'gen_ai.usage.output_tokens'],
  ['cached_input_tokens', 'tollgate.usage.cached_input_tokens'],
  ['image_units', 'tollgate.usage.image_units'],
  ['charged_micros', 'tollgate.charged_micros'],
  ['metered_source', 'tollgate.metered_source'],
  ['outcome', 'tollgate.outcome'],
  ['attempts', 'tollgate.attempts'],
  ['status', 'http.response.status_code'],
  ['rid', 'tollgate.request_id'],
];

const propagator = new W3CTraceContextPropagator();

export class OtelTracer implements Tracer {
  private readonly provider: BasicTracerProvider;
  private readonly tracer;

  constructor(url: string, sampleRatio: number, maxQueue: number) {
    const exporter = new OTLPTraceExporter({ url, timeoutMillis: 5000, concurrencyLimit: 2 });
    this.provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': 'tollgate', 'process.pid': process.pid }),
      sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(sampleRatio) }),
      spanProcessors: [new BatchSpanProcessor(exporter, { maxQueueSize: maxQueue, maxExportBatchSize: Math.min(512, maxQueue), scheduledDelayMillis: 1000, exportTimeoutMillis: 10_000 })],
    });
    this.tracer = this.provider.getTracer('tollgate');
  }

  startCall(surface: string, traceparent: string, startMs: number): CallTrace {
    const parent = traceparent === '' ? ROOT_CONTEXT : propagator.extract(ROOT_CONTEXT, { traceparent }, defaultTextMapGetter);
    const span = this.tracer.startSpan(surface, { kind: SpanKind.SERVER, startTime: startMs, attributes: { 'gen_ai.operation.name': OPERATION[surface] ?? surface, 'tollgate.surface': surface } }, parent);
    return new OtelCall(this.tracer, span, trace.setSpan(parent, span), OPERATION[surface] ?? surface);
  }

  async shutdown(): Promise<void> {
    await this.provider.shutdown().catch(() => {});
  }
}

class OtelCall implements CallTrace {
  private attempt: Span | null = null;

  constructor(
    private readonly tracer: ReturnType<BasicTracerProvider['getTracer']>,
    private readonly span: Span,
    private readonly ctx: Context,
    private readonly operation: string,
  ) {}

  stage(name: string, startMs: number, endMs: number, attributes: Record<string, string | number>): void {
    this.tracer.startSpan(name, { startTime: startMs, attributes }, this.ctx).end(endMs);
  }

  attemptStart(supplier: string, upstreamModel: string): string {
    const span = this.tracer.startSpan(`${this.operation} ${upstreamModel}`, { kind: SpanKind.CLIENT, attributes: { 'gen_ai.operation.name': this.operation, 'gen_ai.request.model': upstreamModel, 'gen_ai.provider.name': supplier } }, this.ctx);
    this.attempt = span;
    const sc = span.spanContext();
    return `00-${sc.traceId}-${sc.spanId}-0${sc.traceFlags & 1}`;
  }

  attemptEnd(status: number, error: string | null): void {
    const span = this.attempt;
    if (span === null) return;
    this.attempt = null;
    if (status !== 0) span.setAttribute('http.response.status_code', status);
    if (error !== null) {
      span.setAttribute('error.type', error);
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end();
  }

  end(line: Readonly<Record<string, unknown>>): void {
    this.attemptEnd(0, 'aborted'); // an attempt still open when the call ends (the client left)
    const span = this.span;
    for (const [field, name] of CALL_ATTRIBUTES) {
      const v = line[field];
      if (typeof v === 'string' || typeof v === 'number') span.setAttribute(name, v);
    }
    if (typeof line.model === 'string') span.updateName(`${this.operation} ${line.model}`);
    if (typeof line.status === 'number' && line.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  }
}
