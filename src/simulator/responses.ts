// OpenAI Responses API: POST /{instance}/v1/responses.
//
// Output items: a message (words), or with [sim:tool=NAME] a function_call
// (NAME a declared function tool), a custom_tool_call (a declared custom
// tool), or a web_search_call followed by the message (NAME `web_search` with
// a web_search tool declared). [sim:reasoning] puts a reasoning item first,
// carrying encrypted_content when `include` asks for reasoning.encrypted_content.
import {
  answerOf, ceilingOf, chunkOf, contentText, declaresTool, isRecord, nextId, plan, unixSeconds,
  TOOL_ARGUMENTS_JSON, TOOL_FRAGMENTS_JSON, type Json, type Plan,
} from './common.js';
import { parseDirectives } from './directives.js';
import type { Exchange } from './exchange.js';
import { eventPrefix, startStream, type StreamSource } from './sse.js';
import { countInput } from './tokens.js';
import { structuredAnswer, tokenPieces } from './structured.js';
import { DEFAULT_WORDS } from './words.js';

const INPUT_PARTS = ['input_text', 'output_text', 'text'];
const REASONING = '[sim:reasoning]';
/** The reasoning item's summary, and the output tokens it stands for (reasoning_tokens). */
const REASONING_SUMMARY_JSON = '"thinking it over"';
const REASONING_TOKENS = 3;

function toolName(t: Json): unknown {
  if (t.type === 'function' || t.type === 'custom') return t.name;
  return t.type === 'web_search' ? 'web_search' : undefined;
}

function toolType(tools: unknown, name: string): string | null {
  if (!Array.isArray(tools)) return null;
  for (const t of tools) if (isRecord(t) && toolName(t) === name) return t.type as string;
  return null;
}

function usageJson(input: number, output: number, reasoning: number): string {
  return `{"input_tokens":${input},"input_tokens_details":{"cached_tokens":0},"output_tokens":${output},"output_tokens_details":{"reasoning_tokens":${reasoning}},"total_tokens":${input + output}}`;
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
    if (item.type === 'function_call' || item.type === 'custom_tool_call') text = `${String(item.name ?? '')}${String(item.arguments ?? item.input ?? '')}`;
    else if (item.type === 'function_call_output' || item.type === 'custom_tool_call_output') text = contentText(item.output, INPUT_PARTS);
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
  const kind = d.tool === null ? null : toolType(req.tools, d.tool);
  if (d.tool !== null && (kind === null || !declaresTool(req.tools, d.tool, toolName))) {
    return ex.fail(400, `tool '${d.tool}' is not declared in tools`);
  }
  const ceiling = ceilingOf(req.max_output_tokens);
  const search = kind === 'web_search';
  const structured = isRecord(req.text) ? structuredAnswer(req.text.format) : null;
  const pieces = structured === null ? null : tokenPieces(structured);
  const p = plan(search ? null : d.tool, d.words >= 0 ? d.words : DEFAULT_WORDS, ceiling, pieces);
  const reasoning = read.last.includes(REASONING);
  const encrypted = reasoning && Array.isArray(req.include) && req.include.includes('reasoning.encrypted_content');
  const input = countInput(read.texts, read.texts.length);
  const extra = reasoning ? REASONING_TOKENS : 0;
  const usage = d.noUsage ? null : usageJson(input, p.chunks + extra, extra);
  const r = new ResponseShape(req, model, ceiling, p, kind === 'custom', search, reasoning, encrypted, usage);
  if (ex.stream) startStream(ex, new ResponsesStream(r), d);
  else ex.answer(r.snapshot(r.status, r.output()), d);
}

/** Everything constant about one response, and its JSON pieces. */
class ResponseShape {
  readonly id = nextId('resp_');
  readonly itemId: string;
  readonly callId: string;
  /** Of the response and of its output item alike. */
  readonly status: string;
  /** Items before the main one (reasoning, web search), finished: their JSON. */
  readonly before: string[] = [];
  readonly searchId: string | null;
  private readonly open: string;
  private readonly close: string;

  constructor(
    req: Json,
    model: string,
    ceiling: number,
    readonly p: Plan,
    readonly custom: boolean,
    search: boolean,
    reasoning: boolean,
    encrypted: boolean,
    private readonly usage: string | null,
  ) {
    this.itemId = nextId(p.tool === null ? 'msg_' : custom ? 'ctc_' : 'fc_');
    this.callId = p.tool === null ? '' : nextId('call_');
    this.status = p.cut ? 'incomplete' : 'completed';
    if (reasoning) {
      const enc = encrypted ? `,"encrypted_content":"enc_${nextId('')}"` : '';
      this.before.push(`{"id":"${nextId('rs_')}","type":"reasoning","summary":[{"type":"summary_text","text":${REASONING_SUMMARY_JSON}}]${enc}}`);
    }
    this.searchId = search ? nextId('ws_') : null;
    if (search) this.before.push(this.searchItem('completed'));
    const instructions = typeof req.instructions === 'string' ? JSON.stringify(req.instructions) : 'null';
    const max = Number.isFinite(ceiling) ? ceiling : 'null';
    this.open = `{"id":"${this.id}","object":"response","created_at":${unixSeconds()},"status":"`;
    this.close = `"error":null,"instructions":${instructions},"max_output_tokens":${max},"model":${JSON.stringify(model)},"output":[`;
  }

  searchItem(status: string): string {
    return `{"id":"${this.searchId}","type":"web_search_call","status":"${status}","action":{"type":"search","query":"sim"}}`;
  }

  /** The response object; `output` is the JSON of its output items. */
  snapshot(status: string, output: string): string {
    const details = status === 'incomplete' ? '{"reason":"max_output_tokens"}' : 'null';
    const usage = status === 'in_progress' ? ',"usage":null' : this.usage === null ? '' : `,"usage":${this.usage}`;
    return `${this.open}${status}","incomplete_details":${details},${this.close}${output}],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"store":false,"temperature":1,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":1,"truncation":"disabled"${usage},"user":null,"metadata":{}}`;
  }

  /** Every output item, finished. */
  output(): string {
    return [...this.before, this.item(this.status)].join(',');
  }

  /** The main output item; in progress it has no text, arguments or input yet. */
  item(status: string): string {
    const done = status !== 'in_progress';
    if (this.p.tool === null) {
      const content = done ? `{"type":"output_text","annotations":[],"logprobs":[],"text":${answerOf(this.p)}}` : '';
      return `{"id":"${this.itemId}","type":"message","status":"${status}","content":[${content}],"role":"assistant"}`;
    }
    const body = done ? TOOL_ARGUMENTS_JSON : '""';
    const member = this.custom ? `"input":${body}` : `"arguments":${body}`;
    return `{"id":"${this.itemId}","type":"${this.custom ? 'custom_tool_call' : 'function_call'}","status":"${status}",${member},"call_id":"${this.callId}","name":${JSON.stringify(this.p.tool)}}`;
  }
}

class ResponsesStream implements StreamSource {
  readonly count: number;
  /** Output index of the main item (after reasoning and web search). */
  private readonly at: number;
  private readonly headFrames: string;
  /** Sequence number of the first content chunk. */
  private readonly first: number;
  private readonly deltaPrefix: string;

  constructor(private readonly r: ResponseShape) {
    this.count = r.p.chunks;
    this.at = r.before.length;
    const type = r.p.tool === null ? 'response.output_text.delta' : r.custom ? 'response.custom_tool_call_input.delta' : 'response.function_call_arguments.delta';
    this.deltaPrefix = `${eventPrefix(type)}{"type":"${type}","sequence_number":`;
    let seq = 0;
    const opening = r.snapshot('in_progress', '');
    let s = frame('response.created', seq++, `"response":${opening}`) + frame('response.in_progress', seq++, `"response":${opening}`);
    r.before.forEach((item, i) => {
      const search = r.searchId !== null && i === r.before.length - 1;
      s += frame('response.output_item.added', seq++, `"output_index":${i},"item":${search ? r.searchItem('in_progress') : item}`);
      if (search) {
        for (const phase of ['in_progress', 'searching', 'completed']) {
          s += frame(`response.web_search_call.${phase}`, seq++, `"output_index":${i},"item_id":"${r.searchId}"`);
        }
      }
      s += frame('response.output_item.done', seq++, `"output_index":${i},"item":${item}`);
    });
    s += frame('response.output_item.added', seq++, `"output_index":${this.at},"item":${r.item('in_progress')}`);
    if (r.p.tool === null) {
      s += frame(
        'response.content_part.added', seq++,
        `"item_id":"${r.itemId}","output_index":${this.at},"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}`,
      );
    }
    this.headFrames = s;
    this.first = seq;
  }

  head(): string {
    return this.headFrames;
  }

  chunk(i: number): string {
    const seq = this.first + i;
    const at = `,"item_id":"${this.r.itemId}","output_index":${this.at},`;
    return this.r.p.tool === null
      ? `${this.deltaPrefix}${seq}${at}"content_index":0,"delta":${chunkOf(this.r.p, i)},"logprobs":[]}\n\n`
      : `${this.deltaPrefix}${seq}${at}"delta":${TOOL_FRAGMENTS_JSON[i] as string}}\n\n`;
  }

  tail(): string {
    const r = this.r;
    let seq = this.first + this.count;
    let s: string;
    const at = `"item_id":"${r.itemId}","output_index":${this.at}`;
    if (r.p.tool === null) {
      const text = answerOf(r.p);
      s =
        frame('response.output_text.done', seq++, `${at},"content_index":0,"text":${text},"logprobs":[]`) +
        frame('response.content_part.done', seq++, `${at},"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":${text}}`);
    } else if (r.custom) {
      s = frame('response.custom_tool_call_input.done', seq++, `${at},"input":${TOOL_ARGUMENTS_JSON}`);
    } else {
      s = frame('response.function_call_arguments.done', seq++, `${at},"name":${JSON.stringify(r.p.tool)},"arguments":${TOOL_ARGUMENTS_JSON}`);
    }
    s += frame('response.output_item.done', seq++, `"output_index":${this.at},"item":${r.item(r.status)}`);
    return s + frame(`response.${r.status}`, seq, `"response":${r.snapshot(r.status, r.output())}`);
  }
}
