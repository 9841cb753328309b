// Chat completions stream: each upstream chunk is parsed once and written as
// the gateway's own chunk, its choices passed by index as they came (with `n`,
// chunks of several choices interleave; each ends with its own finish_reason). The repeating head of every chunk (id, object,
// created, model) is serialized once per call.
import type { Metered, Outcome } from '../../billing/types.js';
import type { SseEvent } from '../../suppliers/sse-reader.js';
import type { CallInfo, StreamTranscoder } from '../surface.js';

const FINISH_REASONS = new Set(['stop', 'length', 'tool_calls', 'content_filter']);

/** The spec's four finish reasons; the deprecated function_call is a tool call. */
export function normalizeFinish(reason: unknown): string | null {
  if (reason === null || reason === undefined) return null;
  if (reason === 'function_call') return 'tool_calls';
  return FINISH_REASONS.has(reason as string) ? (reason as string) : 'stop';
}

export function meteredFromUsage(u: Record<string, any>): Metered {
  return {
    inputTokens: u.prompt_tokens ?? 0,
    cachedInputTokens: u.prompt_tokens_details?.cached_tokens ?? 0,
    cacheWriteTokens: 0,
    outputTokens: u.completion_tokens ?? 0,
    imageUnits: 0,
    source: 'supplier',
  };
}

/** ReplyUsage: prompt_tokens includes supplier-cached input. */
export function usageObject(m: Metered): Record<string, unknown> {
  return {
    completion_tokens: m.outputTokens,
    prompt_tokens: m.inputTokens,
    prompt_tokens_details: { cached_tokens: m.cachedInputTokens },
    total_tokens: m.inputTokens + m.outputTokens,
  };
}

export class ChatStream implements StreamTranscoder {
  complete = false;
  private readonly head: string;
  private usage: Metered | null = null;
  /** Per choice index: its finish reason once it came (null until then). With `n`, choices end apart. */
  private readonly finishes = new Map<number, string | null>();
  private produced = '';
  private readonly includeUsage: boolean;

  constructor(call: CallInfo, includeUsage: boolean) {
    this.head = `data: {"id":${JSON.stringify(call.requestId)},"object":"chat.completion.chunk","created":${call.created},"model":${JSON.stringify(call.model)},"choices":`;
    this.includeUsage = includeUsage;
  }

  event(ev: SseEvent): string {
    if (ev.data === '[DONE]') {
      this.complete = true;
      return '';
    }
    const chunk = JSON.parse(ev.data) as Record<string, any>;
    if (chunk.usage) this.usage = meteredFromUsage(chunk.usage);
    const choices = chunk.choices as Array<Record<string, any>> | undefined;
    if (!choices || choices.length === 0) return '';
    for (let i = 0; i < choices.length; i++) {
      const c = choices[i];
      const index = typeof c.index === 'number' ? c.index : i;
      if (!this.finishes.has(index)) this.finishes.set(index, null);
      const delta = c.delta;
      if (delta) {
        if (typeof delta.content === 'string') this.produced += delta.content;
        if (delta.tool_calls) for (const tc of delta.tool_calls) this.produced += tc.function?.arguments ?? '';
      }
      if (c.finish_reason !== null && c.finish_reason !== undefined) {
        c.finish_reason = normalizeFinish(c.finish_reason);
        this.finishes.set(index, c.finish_reason);
      }
    }
    return this.head + JSON.stringify(choices) + '}\n\n';
  }

  metered(): Metered | null {
    return this.usage;
  }

  /** Completed when the stream ended and every choice finished, none of them cut by the ceiling. */
  outcome(): Outcome {
    if (!this.complete || this.finishes.size === 0) return 'incomplete';
    for (const reason of this.finishes.values()) if (reason === null || reason === 'length') return 'incomplete';
    return 'completed';
  }

  producedText(): string {
    return this.produced;
  }

  /** The usage chunk when the caller asked for it (stream_options.include_usage), then [DONE]. */
  finish(settled: Metered): string {
    return (this.includeUsage ? this.head + '[],"usage":' + JSON.stringify(usageObject(settled)) + '}\n\n' : '') + 'data: [DONE]\n\n';
  }

  failure(): string {
    return '';
  }
}
