// Tracing as the pipeline sees it: our own small interface, so that with
// tracing off (tracing.otlp_url null) no OpenTelemetry module is loaded and
// a call pays one null check per stage (DESIGN.md: optional hooks flattened
// to null). The OpenTelemetry implementation is metrics/otel.ts, imported
// only when tracing is on (loadTracer).

/** One traced model call: its span, and the child spans of its stages. */
export interface CallTrace {
  /** A stage timed by the pipeline (performance.now() ms): reservation, settlement. */
  stage(name: 'reservation' | 'settlement', startMs: number, endMs: number, attributes: Record<string, string | number>): void;
  /** A supplier attempt starts now; returns the traceparent to send it (its span as the parent). */
  attemptStart(supplier: string, upstreamModel: string): string;
  /** The attempt's reply headers came (status), or it failed (`error`: the failure kind). */
  attemptEnd(status: number, error: string | null): void;
  /** The call is done: `line` is its request log line (model, status, tokens, charge, timings). */
  end(line: Readonly<Record<string, unknown>>): void;
}

export interface Tracer {
  /** A call that started at `startMs` (performance.now()); `traceparent`: the caller's header ('' when none). */
  startCall(surface: string, traceparent: string, startMs: number): CallTrace | null;
  /** Exports what is queued, within a bound, at shutdown. */
  shutdown(): Promise<void>;
}

export interface TracingSettings {
  otlp_url: string | null;
  sample_ratio: number;
  max_queue: number;
}

/** The tracer, or null when tracing is off: then OpenTelemetry is never imported. */
export async function loadTracer(settings: TracingSettings): Promise<Tracer | null> {
  if (settings.otlp_url === null) return null;
  const { OtelTracer } = await import('./otel.js');
  return new OtelTracer(settings.otlp_url, settings.sample_ratio, settings.max_queue);
}
