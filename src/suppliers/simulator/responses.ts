// OpenAI Responses API: POST /{instance}/v1/responses.
import {
  ceilingOf, contentText, declaresTool, isRecord, nextId, plan, unixSeconds,
  TOOL_ARGUMENTS_JSON, TOOL_FRAGMENTS_JSON, type Json, type Plan,
} from './common.js';
import { parseDirectives } from './directives.js';
import type { Exchange } from './exchange.js';
import { eventPrefix, startStream, type StreamSource } from './sse.js';
import { countInput } from './tokens.js';
import { answerJson, DEFAULT_WORDS, wordChunkJson } from './words.js';

const INPUT_PARTS = ['input_text', 'output_text', 'text'];
const TEXT_DELTA = eventPrefix('response.output_text.delta') + '{"type":"response.output_text.delta","sequence_number":';
const ARGS_DELTA =
  eventPrefix('response.function_call_arguments.delta') + '{"type":"response.function_call_arguments.delta","sequence_number":';

function toolName(t: Json): unknown {
  return t.type === 'function' ? t.name : undefined;
}

function usageJson(input: number, output: number): string {
  return `{"input_tokens":${input},"input_tokens_details":{"cached_tokens":0},"output_tokens":${output},"output_tokens_details":{"reasoning_tokens":0},"total_tokens":${input + output}}`;
}

function frame(type: string, seq: number, rest: string): string {
  return `${eventPrefix(type)}{"type":"${type}","sequence_number":${seq},${rest}}\n\n`;
}

/** Texts of the turns, and the last user turn's text. */
function readInput(req: Json): { texts: string[]; last: string } | null {
  const texts: string[] = [];
  if (typeof req.instructions === 'string') texts.push(req.instructions);
  const input = req.input;
  if (typeof input === 'string') {
    texts.push(input);
    return { texts, last: input };
  }
  if (!Array.isArray(input)) return null;
  let last = '';
  for (const item of input) {
    if (!isRecord(item)) return null;
    let text = '';
    if (item.type === 'function_call') text = `${String(item.name ?? '')}${String(item.arguments ?? '')}`;
    else if (item.type === 'function_call_output') text = contentText(item.output, INPUT_PARTS);
    else text = contentText(item.content, INPUT_PARTS);
    if (item.role === 'user') last = text;
    texts.push(text);
  }
  return { texts, last };
}

export function handleResponses(ex: Exchange, req: Json): void {
  const model = req.model;
  if (typeof model !== 'string') return ex.fail(400, 'you must provide a model parameter');
  const read = readInput(req);
  if (read === null) return ex.fail(400, "'input' must be a string or an array of input items");
  const d = parseDirectives(read.last, ex.instance);
  if (d.status !== 0) return ex.simulateError(d);
  if (d.tool !== null && !declaresTool(req.tools, d.tool, toolName)) {
    return ex.fail(400, `tool '${d.tool}' is not declared in tools`);
  }
  const ceiling = ceilingOf(req.max_output_tokens);
  const p = plan(d.tool, d.words >= 0 ? d.words : DEFAULT_WORDS, ceiling);
  const input = countInput(read.texts, read.texts.length);
  const r = new ResponseShape(req, model, ceiling, p, d.noUsage ? null : usageJson(input, p.chunks));
  if (ex.stream) startStream(ex, new ResponsesStream(r), d);
  else ex.answer(r.snapshot(r.status, r.item(r.status)), d);
}

/** Everything constant about one response, and its JSON pieces. */
class ResponseShape {
  readonly id = nextId('resp_');
  readonly itemId: string;
  readonly callId: string;
  /** Of the response and of its output item alike. */
  readonly status: string;
  private readonly before: string;
  private readonly after: string;

  constructor(
    req: Json,
    model: string,
    ceiling: number,
    readonly p: Plan,
    private readonly usage: string | null,
  ) {
    this.itemId = nextId(p.tool === null ? 'msg_' : 'fc_');
    this.callId = p.tool === null ? '' : nextId('call_');
    this.status = p.cut ? 'incomplete' : 'completed';
    const instructions = typeof req.instructions === 'string' ? JSON.stringify(req.instructions) : 'null';
    const max = Number.isFinite(ceiling) ? ceiling : 'null';
    this.before = `{"id":"${this.id}","object":"response","created_at":${unixSeconds()},"status":"`;
    this.after = `"error":null,"instructions":${instructions},"max_output_tokens":${max},"model":${JSON.stringify(model)},"output":[`;
  }

  /** The response object; `output` is the JSON of its output items. */
  snapshot(status: string, output: string): string {
    const details = status === 'incomplete' ? '{"reason":"max_output_tokens"}' : 'null';
    const usage = status === 'in_progress' ? ',"usage":null' : this.usage === null ? '' : `,"usage":${this.usage}`;
    return `${this.before}${status}","incomplete_details":${details},${this.after}${output}],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"store":false,"temperature":1,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":1,"truncation":"disabled"${usage},"user":null,"metadata":{}}`;
  }

  /** The output item; in progress it has no text or arguments yet. */
  item(status: string): string {
    const done = status !== 'in_progress';
    if (this.p.tool === null) {
      const content = done ? `{"type":"output_text","annotations":[],"logprobs":[],"text":${answerJson(this.p.chunks)}}` : '';
      return `{"id":"${this.itemId}","type":"message","status":"${status}","content":[${content}],"role":"assistant"}`;
    }
    return `{"id":"${this.itemId}","type":"function_call","status":"${status}","arguments":${done ? TOOL_ARGUMENTS_JSON : '""'},"call_id":"${this.callId}","name":${JSON.stringify(this.p.tool)}}`;
  }
}

class ResponsesStream implements StreamSource {
  readonly count: number;
  /** Sequence number of the first content chunk. */
  private readonly first: number;
  private readonly rest: string;

  constructor(private readonly r: ResponseShape) {
    this.count = r.p.chunks;
    this.first = r.p.tool === null ? 4 : 3;
    this.rest = `,"item_id":"${r.itemId}","output_index":0,${r.p.tool === null ? '"content_index":0,' : ''}"delta":`;
  }

  head(): string {
    const r = this.r;
    const opening = r.snapshot('in_progress', '');
    let s =
      frame('response.created', 0, `"response":${opening}`) +
      frame('response.in_progress', 1, `"response":${opening}`) +
      frame('response.output_item.added', 2, `"output_index":0,"item":${r.item('in_progress')}`);
    if (r.p.tool === null) {
      s += frame(
        'response.content_part.added', 3,
        `"item_id":"${r.itemId}","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}`,
      );
    }
    return s;
  }

  chunk(i: number): string {
    const seq = this.first + i;
    return this.r.p.tool === null
      ? `${TEXT_DELTA}${seq}${this.rest}${wordChunkJson(i)},"logprobs":[]}\n\n`
      : `${ARGS_DELTA}${seq}${this.rest}${TOOL_FRAGMENTS_JSON[i] as string}}\n\n`;
  }

  tail(): string {
    const r = this.r;
    let seq = this.first + this.count;
    let s: string;
    if (r.p.tool === null) {
      const text = answerJson(r.p.chunks);
      const at = `"item_id":"${r.itemId}","output_index":0,"content_index":0`;
      s =
        frame('response.output_text.done', seq++, `${at},"text":${text},"logprobs":[]`) +
        frame('response.content_part.done', seq++, `${at},"part":{"type":"output_text","annotations":[],"logprobs":[],"text":${text}}`);
    } else {
      s = frame(
        'response.function_call_arguments.done', seq++,
        `"item_id":"${r.itemId}","output_index":0,"name":${JSON.stringify(r.p.tool)},"arguments":${TOOL_ARGUMENTS_JSON}`,
      );
    }
    const item = r.item(r.status);
    s += frame('response.output_item.done', seq++, `"output_index":0,"item":${item}`);
    return s + frame(`response.${r.status}`, seq, `"response":${r.snapshot(r.status, item)}`);
  }
}
