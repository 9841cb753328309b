// OpenAI chat completions: POST /{instance}/v1/chat/completions.
import {
  ceilingOf, contentText, declaresTool, isRecord, nextId, plan, unixSeconds,
  TOOL_ARGUMENTS_JSON, TOOL_FRAGMENTS_JSON, type Json, type Plan,
} from './common.js';
import { parseDirectives } from './directives.js';
import type { Exchange } from './exchange.js';
import { startStream, type StreamSource } from './sse.js';
import { countInput } from './tokens.js';
import { answerJson, DEFAULT_WORDS, wordChunkJson } from './words.js';

const TEXT_PARTS = ['text'];
const CHUNK_END = '},"logprobs":null,"finish_reason":null}]}\n\n';
const DONE = 'data: [DONE]\n\n';

function toolName(t: Json): unknown {
  return t.type === 'function' && isRecord(t.function) ? t.function.name : undefined;
}

function finishReason(p: Plan): string {
  return p.tool !== null ? 'tool_calls' : p.cut ? 'length' : 'stop';
}

function usageJson(input: number, output: number): string {
  return `{"prompt_tokens":${input},"completion_tokens":${output},"total_tokens":${input + output},"prompt_tokens_details":{"cached_tokens":0}}`;
}

export function handleChat(ex: Exchange, req: Json): void {
  const model = req.model;
  if (typeof model !== 'string') return ex.fail(400, 'you must provide a model parameter');
  const messages = req.messages;
  if (!Array.isArray(messages)) return ex.fail(400, "'messages' is a required property");
  const texts: string[] = new Array<string>(messages.length);
  let last = '';
  for (let i = 0; i < messages.length; i++) {
    const m: unknown = messages[i];
    if (!isRecord(m)) return ex.fail(400, `messages[${i}] is not an object`);
    let text = contentText(m.content, TEXT_PARTS);
    if (m.role === 'user') last = text;
    // Replayed tool calls are part of the context the model reads.
    if (Array.isArray(m.tool_calls)) {
      for (const c of m.tool_calls) if (isRecord(c) && isRecord(c.function)) text += String(c.function.arguments ?? '');
    }
    texts[i] = text;
  }
  const d = parseDirectives(last, ex.instance);
  if (d.status !== 0) return ex.simulateError(d);
  if (d.tool !== null && !declaresTool(req.tools, d.tool, toolName)) {
    return ex.fail(400, `tool '${d.tool}' is not declared in tools`);
  }
  const p = plan(d.tool, d.words >= 0 ? d.words : DEFAULT_WORDS, ceilingOf(req.max_completion_tokens ?? req.max_tokens));
  const input = d.inputTokens >= 0 ? d.inputTokens : countInput(texts, messages.length);
  const usage = d.noUsage ? null : usageJson(input, p.chunks);
  const base = `{"id":"${nextId('chatcmpl-')}","object":"chat.completion${ex.stream ? '.chunk' : ''}","created":${unixSeconds()},"model":${JSON.stringify(model)}`;
  if (ex.stream) {
    const opts = req.stream_options;
    const withUsage = usage !== null && isRecord(opts) && opts.include_usage === true;
    return startStream(ex, new ChatStream(base, p, withUsage ? usage : null), d);
  }
  const message =
    p.tool === null
      ? `{"role":"assistant","content":${answerJson(p.chunks)},"refusal":null,"annotations":[]}`
      : `{"role":"assistant","content":null,"refusal":null,"annotations":[],"tool_calls":[{"id":"${nextId('call_')}","type":"function","function":{"name":${JSON.stringify(p.tool)},"arguments":${TOOL_ARGUMENTS_JSON}}}]}`;
  ex.answer(
    `${base},"choices":[{"index":0,"message":${message},"logprobs":null,"finish_reason":"${finishReason(p)}"}]${usage === null ? '' : `,"usage":${usage}`}}`,
    d,
  );
}

class ChatStream implements StreamSource {
  readonly count: number;
  private readonly open: string;
  private readonly piece: string;

  constructor(
    private readonly base: string,
    private readonly p: Plan,
    private readonly usage: string | null,
  ) {
    this.count = p.chunks;
    this.open = `data: ${base},"choices":[{"index":0,"delta":{`;
    this.piece = p.tool === null ? `${this.open}"content":` : `${this.open}"tool_calls":[{"index":0,"function":{"arguments":`;
  }

  head(): string {
    if (this.p.tool === null) return `${this.open}"role":"assistant","content":""${CHUNK_END}`;
    const call = `{"index":0,"id":"${nextId('call_')}","type":"function","function":{"name":${JSON.stringify(this.p.tool)},"arguments":""}}`;
    return `${this.open}"role":"assistant","content":null,"tool_calls":[${call}]${CHUNK_END}`;
  }

  chunk(i: number): string {
    return this.p.tool === null
      ? this.piece + wordChunkJson(i) + CHUNK_END
      : this.piece + (TOOL_FRAGMENTS_JSON[i] as string) + '}}]' + CHUNK_END;
  }

  tail(): string {
    const close = `${this.open}},"logprobs":null,"finish_reason":"${finishReason(this.p)}"}]}\n\n`;
    if (this.usage === null) return close + DONE;
    return `${close}data: ${this.base},"choices":[],"usage":${this.usage}}\n\n${DONE}`;
  }
}
