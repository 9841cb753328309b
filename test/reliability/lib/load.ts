// Traffic for the reliability suite and the soak: one call of any surface,
// classified by how it ended, and "bystanders", clients who are not part of a
// fault and must keep being served while it happens (their error rate and p99
// are what the report shows per fault).
import { request, type Dispatcher } from 'undici';
import { chatEnvelopeFault, embeddingsEnvelopeFault, imagesEnvelopeFault, messagesEnvelopeFault } from '../../helpers/envelopes.js';

export type Surface = 'chat' | 'chat-stream' | 'messages' | 'messages-stream' | 'responses' | 'responses-stream' | 'embeddings' | 'images' | 'count_tokens';
export const SURFACES: Surface[] = ['chat', 'chat-stream', 'messages', 'messages-stream', 'responses', 'responses-stream', 'embeddings', 'images', 'count_tokens'];

/** How a call ended. `broken` is any answer the spec does not allow (a refusal outside its envelope, a stream ending wrongly). */
export type Outcome = 'ok' | 'refused-4xx' | 'refused-5xx' | 'stream-error' | 'cut' | 'broken';

export interface CallResult {
  surface: Surface;
  status: number;
  outcome: Outcome;
  requestId: string | null;
  ms: number;
  /** Why the answer is `broken`. */
  fault?: string;
}

function requestFor(surface: Surface, text: string): { path: string; body: unknown } {
  switch (surface) {
    case 'chat':
    case 'chat-stream':
      return { path: '/v1/chat/completions', body: { model: 'nw-swift-1', max_tokens: 64, stream: surface === 'chat-stream', messages: [{ role: 'user', content: text }] } };
    case 'messages':
    case 'messages-stream':
      return { path: '/v1/messages', body: { model: 'ks-quill-1', max_tokens: 64, stream: surface === 'messages-stream', messages: [{ role: 'user', content: text }] } };
    case 'responses':
    case 'responses-stream':
      return { path: '/v1/responses', body: { model: 'nw-swift-1', max_output_tokens: 64, store: false, stream: surface === 'responses-stream', input: text } };
    case 'embeddings':
      return { path: '/v1/embeddings', body: { model: 'nw-embed-1', input: [text, text], encoding_format: 'base64' } };
    case 'images':
      return { path: '/v1/images/generations', body: { model: 'au-canvas-1', prompt: text, n: 1, size: '1024x1024' } };
    case 'count_tokens':
      return { path: '/v1/messages/count_tokens', body: { model: 'ks-quill-1', messages: [{ role: 'user', content: text }] } };
  }
}

function envelopeFault(surface: Surface, body: unknown): string | null {
  if (surface.startsWith('chat') || surface.startsWith('responses')) return chatEnvelopeFault(body);
  if (surface.startsWith('messages') || surface === 'count_tokens') return messagesEnvelopeFault(body);
  if (surface === 'embeddings') return embeddingsEnvelopeFault(body);
  return imagesEnvelopeFault(body);
}

/** How a stream's text ended, by the spec's rule for its surface: null when complete, 'error' for an in-stream error, or what is wrong. */
export function streamEnd(surface: Surface, text: string): 'complete' | 'error' | string {
  if (surface === 'chat-stream') return text.includes('data: [DONE]') ? (text.trimEnd().endsWith('data: [DONE]') ? 'complete' : 'events after [DONE]') : 'error';
  if (surface === 'messages-stream') {
    if (text.includes('event: message_stop')) return text.includes('event: error') ? 'both message_stop and error' : 'complete';
    return text.includes('event: error') ? 'error' : 'neither message_stop nor an error event';
  }
  const terminal = (text.match(/"type":"response\.(completed|failed)"/g) ?? []).length;
  if (terminal !== 1) return `${terminal} terminal events`;
  return text.includes('"type":"response.completed"') ? 'complete' : 'error';
}

/** One call; never throws (a connection cut is the outcome `cut`). */
export async function call(base: string, key: string, surface: Surface, text: string, dispatcher?: Dispatcher, signal?: AbortSignal): Promise<CallResult> {
  const { path, body } = requestFor(surface, text);
  const started = performance.now();
  const out = (status: number, outcome: Outcome, requestId: string | null, fault?: string): CallResult => ({ surface, status, outcome, requestId, ms: performance.now() - started, ...(fault ? { fault } : {}) });
  try {
    const res = await request(base + path, {
      method: 'POST',
      dispatcher,
      signal,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify(body),
    });
    const requestId = (res.headers['x-request-id'] as string | undefined) ?? null;
    const text = await res.body.text();
    const type = String(res.headers['content-type'] ?? '');
    if (res.statusCode !== 200) {
      let parsed: unknown = null;
      try {
        parsed = JSON.parse(text);
      } catch {
        return out(res.statusCode, 'broken', requestId, `a ${res.statusCode} that is not JSON`);
      }
      const wrong = envelopeFault(surface, parsed);
      if (wrong !== null) return out(res.statusCode, 'broken', requestId, `${res.statusCode} outside the envelope: ${wrong}`);
      return out(res.statusCode, res.statusCode >= 500 ? 'refused-5xx' : 'refused-4xx', requestId);
    }
    if (type.startsWith('text/event-stream')) {
      const end = streamEnd(surface, text);
      if (end === 'complete') return out(200, 'ok', requestId);
      if (end === 'error') return out(200, 'stream-error', requestId);
      return out(200, 'broken', requestId, end);
    }
    try {
      JSON.parse(text);
    } catch {
      return out(200, 'broken', requestId, 'a 200 that is not JSON');
    }
    return out(200, 'ok', requestId);
  } catch (err) {
    // A stream cut without an in-stream error is how chat ends a failure after its first event; undici reports it as a socket error.
    return out(0, 'cut', null, (err as Error).message);
  }
}

/** A storm's call: when it started and ended, and which of the storm's bases and keys it went to. */
export interface StormCall extends CallResult {
  at: number;
  endedAt: number;
  gw: number;
  keyIndex: number;
}

/**
 * `callers` loops of calls until stop(), the n-th on bases[n % bases], keys[n % keys] and surfaces[n % surfaces];
 * a refused call waits 20 ms before the next. `results` fills as calls end.
 */
export function storm(bases: string | string[], keys: string[], callers: number, surfaces: Surface[], text: string): { readonly results: StormCall[]; stop(): Promise<StormCall[]> } {
  const urls = typeof bases === 'string' ? [bases] : bases;
  const results: StormCall[] = [];
  let running = true;
  const loops = Array.from({ length: callers }, async (_, i) => {
    let n = i;
    while (running) {
      const at = Date.now();
      const [gw, keyIndex] = [n % urls.length, n % keys.length];
      const r = await call(urls[gw]!, keys[keyIndex]!, surfaces[n++ % surfaces.length]!, text);
      results.push({ ...r, at, endedAt: Date.now(), gw, keyIndex });
      if (r.outcome !== 'ok') await new Promise((resolve) => setTimeout(resolve, 20));
    }
  });
  return {
    results,
    async stop() {
      running = false;
      await Promise.all(loops);
      return results;
    },
  };
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

export interface BystanderStats {
  sent: number;
  errors: number;
  p99: number;
  /** The first few errors, for a failing assertion's message. */
  samples: CallResult[];
}

/** `callers` loops making ordinary small calls until stop(); what the other clients saw during a fault. */
export function bystanders(base: string, key: string, callers = 2, surfaces: Surface[] = ['chat', 'chat-stream']): { stop(): Promise<BystanderStats> } {
  const results: CallResult[] = [];
  let running = true;
  const loops = Array.from({ length: callers }, async (_, i) => {
    let n = i;
    while (running) {
      const r = await call(base, key, surfaces[n++ % surfaces.length], 'bystander [sim:words=3]');
      results.push(r);
      // Paced: bystanders show whether others are served, not how much the machine can take.
      await new Promise((res) => setTimeout(res, r.outcome === 'ok' ? 5 : 20));
    }
  });
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
      const errors = results.filter((r) => r.outcome !== 'ok');
      return { sent: results.length, errors: errors.length, p99: percentile(results.map((r) => r.ms), 99), samples: errors.slice(0, 5) };
    },
  };
}
