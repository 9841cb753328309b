// OpenAI chat completions: POST /{instance}/v1/chat/completions. Honours `n`
// as OpenAI does: n choices, each with its index and finish_reason, the
// ceiling per choice, completion_tokens summed over them; a stream sends each
// step's chunk for every choice in index order.
import {
  answerOf, ceilingOf, choicesOf, chunkOf, contentText, declaresTool, isRecord, nextId, plan, unixSeconds,
  TOOL_ARGUMENTS_JSON, TOOL_FRAGMENTS_JSON, type Json, type Plan,
} from './common.js';
import { parseDirectives } from './directives.js';
import type { Exchange } from './exchange.js';
import { startStream, type StreamSource } from './sse.js';
import { countInput } from './tokens.js';
import { structuredAnswer, tokenPieces } from './structured.js';
import { DEFAULT_WORDS } from './words.js';

const TEXT_PARTS = ['text'];
const CHUNK_END = '},"logprobs":null,"finish_reason":null}]}\n\n';
const CHOICES_KEY = ',"choices":[{"index":';
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
  const n = choicesOf(req.n);
  if (n === null) return ex.fail(400, `Invalid 'n': expected an integer from 1 to 128.`);
  const structured = structuredAnswer(req.response_format);
  const pieces = structured === null ? null : tokenPieces(structured);
  const p = plan(d.tool, d.words >= 0 ? d.words : DEFAULT_WORDS, ceilingOf(req.max_completion_tokens ?? req.max_tokens), pieces);
  const input = d.inputTokens >= 0 ? d.inputTokens : countInput(texts, messages.length);
  const usage = d.noUsage ? null : usageJson(input, p.chunks * n);
  const base = `{"id":"${nextId('chatcmpl-')}","object":"chat.completion${ex.stream ? '.chunk' : ''}","created":${unixSeconds()},"model":${JSON.stringify(model)}`;
  if (ex.stream) {
    const opts = req.stream_options;
    const withUsage = usage !== null && isRecord(opts) && opts.include_usage === true;
    return startStream(ex, new ChatStream(base, p, n, withUsage ? usage : null), d);
  }
  const choices: string[] = new Array<string>(n);
  for (let i = 0; i < n; i++) {
    const message =
      p.tool === null
        ? `{"role":"assistant","content":${answerOf(p)},"refusal":null,"annotations":[]}`
        : `{"role":"assistant","content":null,"refusal":null,"annotations":[],"tool_calls":[{"id":"${nextId('call_')}","type":"function","function":{"name":${JSON.stringify(p.tool)},"arguments":${TOOL_ARGUMENTS_JSON}}}]}`;
    choices[i] = `{"index":${i},"message":${message},"logprobs":null,"finish_reason":"${finishReason(p)}"}`;
  }
  ex.answer(`${base},"choices":[${choices.join(',')}]${usage === null ? '' : `,"usage":${usage}`}}`, d);
}

/** One step of the stream is a frame per choice, in index order (one choice: exactly the single-choice frames). */
class ChatStream implements StreamSource {
  readonly count: number;
  /** Per choice: the frame opening up to its delta, and the start of a content chunk. */
  private readonly open: string[];
  private readonly piece: string[];

  constructor(
    private readonly base: string,
    private readonly p: Plan,
    private readonly n: number,
    private readonly usage: string | null,
  ) {
    this.count = p.chunks;
    this.open = Array.from({ length: n }, (_, i) => `data: ${base}${CHOICES_KEY}${i},"delta":{`);
    this.piece = this.open.map((open) => (p.tool === null ? `${open}"content":` : `${open}"tool_calls":[{"index":0,"function":{"arguments":`));
  }

  head(): string {
    let out = '';
    for (const open of this.open) {
      if (this.p.tool === null) {
        out += `${open}"role":"assistant","content":""${CHUNK_END}`;
        continue;
      }
      const call = `{"index":0,"id":"${nextId('call_')}","type":"function","function":{"name":${JSON.stringify(this.p.tool)},"arguments":""}}`;
      out += `${open}"role":"assistant","content":null,"tool_calls":[${call}]${CHUNK_END}`;
    }
    return out;
  }

  chunk(i: number): string {
    const text = this.p.tool === null ? chunkOf(this.p, i) + CHUNK_END : (TOOL_FRAGMENTS_JSON[i] as string) + '}}]' + CHUNK_END;
    if (this.n === 1) return (this.piece[0] as string) + text;
    let out = '';
    for (const piece of this.piece) out += piece + text;
    return out;
  }

  tail(): string {
    let close = '';
    for (const open of this.open) close += `${open}},"logprobs":null,"finish_reason":"${finishReason(this.p)}"}]}\n\n`;
    if (this.usage === null) return close + DONE;
    return `${close}data: ${this.base},"choices":[],"usage":${this.usage}}\n\n${DONE}`;
  }
}
