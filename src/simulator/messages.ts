// Anthropic Messages: POST /{instance}/v1/messages.
import {
  contentText, declaresTool, isRecord, nextId, plan, TOOL_ARGUMENTS, TOOL_FRAGMENTS_JSON, type Json, type Plan,
} from './common.js';
import { parseDirectives } from './directives.js';
import type { Exchange } from './exchange.js';
import { eventPrefix, startStream, type StreamSource } from './sse.js';
import { structuredAnswer, tokenPieces } from './structured.js';
import { countInput } from './tokens.js';
import { answerJson, DEFAULT_WORDS, wordChunkJson } from './words.js';

const TEXT_BLOCKS = ['text'];
const TEXT_DELTA = `${eventPrefix('content_block_delta')}{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`;
const JSON_DELTA = `${eventPrefix('content_block_delta')}{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":`;
const PING = `${eventPrefix('ping')}{"type":"ping"}\n\n`;
const BLOCK_STOP = `${eventPrefix('content_block_stop')}{"type":"content_block_stop","index":0}\n\n`;
const MESSAGE_STOP = `${eventPrefix('message_stop')}{"type":"message_stop"}\n\n`;

function toolName(t: Json): unknown {
  return t.name;
}

function stopReason(p: Plan): string {
  return p.cut ? 'max_tokens' : p.tool !== null ? 'tool_use' : 'end_turn';
}

/** A tool call's input: its JSON text, and the same cut into streamed fragments (JSON string literals, one per output token). */
interface ToolInput {
  readonly json: string;
  readonly fragments: readonly string[];
}

/** What [sim:tool=NAME] calls a tool with. */
const SIM_INPUT: ToolInput = { json: TOOL_ARGUMENTS, fragments: TOOL_FRAGMENTS_JSON };

/**
 * The tool a request forces, as Anthropic's API does: `tool_choice: {type:
 * "tool", name}` that tool, `{type: "any"}` the first one declared. One call
 * of it, its input JSON that conforms to the tool's input_schema
 * (structured.ts). This is how clients ask messages for structured output
 * (LangChain's withStructuredOutput, the AI SDK's json tool); null when no
 * declared tool is forced.
 */
function forcedTool(req: Json): { name: string; input: ToolInput } | null {
  const choice = req.tool_choice;
  if (!isRecord(choice) || !Array.isArray(req.tools)) return null;
  const tools = (req.tools as unknown[]).filter(isRecord);
  const declared = choice.type === 'tool' ? tools.find((t) => t.name === choice.name) : choice.type === 'any' ? tools[0] : undefined;
  if (declared === undefined || typeof declared.name !== 'string') return null;
  const answer = structuredAnswer({ type: 'json_schema', schema: declared.input_schema });
  // A tool's input is an object, whatever the schema says.
  const json = answer !== null && answer.startsWith('{') ? answer : '{}';
  return { name: declared.name, input: { json, fragments: tokenPieces(json).map((f) => JSON.stringify(f)) } };
}

function usageJson(input: number, output: number): string {
  return `{"input_tokens":${input},"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":${output}}`;
}

/** Text of one message's content, tool blocks included (they are context too). */
function messageText(content: unknown): string {
  if (!Array.isArray(content)) return contentText(content, TEXT_BLOCKS);
  let text = '';
  for (const b of content) {
    if (!isRecord(b)) continue;
    if (b.type === 'text' && typeof b.text === 'string') text += b.text;
    else if (b.type === 'tool_use') text += JSON.stringify(b.input ?? {});
    else if (b.type === 'tool_result') text += contentText(b.content, TEXT_BLOCKS);
  }
  return text;
}

export function handleMessages(ex: Exchange, req: Json): void {
  const model = req.model;
  if (typeof model !== 'string') return ex.fail(400, 'model: Field required');
  const maxTokens = req.max_tokens;
  if (typeof maxTokens !== 'number' || !Number.isInteger(maxTokens) || maxTokens < 1) {
    return ex.fail(400, 'max_tokens: Field required (an integer of at least 1)');
  }
  const messages = req.messages;
  if (!Array.isArray(messages)) return ex.fail(400, 'messages: Field required');
  const texts: string[] = [];
  if (req.system !== undefined) texts.push(contentText(req.system, TEXT_BLOCKS));
  let last = '';
  for (let i = 0; i < messages.length; i++) {
    const m: unknown = messages[i];
    if (!isRecord(m)) return ex.fail(400, `messages.${i}: Input should be an object`);
    const text = messageText(m.content);
    if (m.role === 'user') last = text;
    texts.push(text);
  }
  const d = parseDirectives(last, ex.instance);
  if (d.status !== 0) return ex.simulateError(d);
  if (d.tool !== null && !declaresTool(req.tools, d.tool, toolName)) {
    return ex.fail(400, `tool '${d.tool}' is not declared in tools`);
  }
  const forced = d.tool === null ? forcedTool(req) : null;
  const toolInput = forced === null ? SIM_INPUT : forced.input;
  const pieces = toolInput.fragments.length;
  // A forced call's input is cut by max_tokens as text is (a unary one is then {}).
  const p: Plan = forced === null
    ? plan(d.tool, d.words >= 0 ? d.words : DEFAULT_WORDS, maxTokens)
    : { tool: forced.name, chunks: Math.min(pieces, maxTokens), cut: pieces > maxTokens, pieces: null };
  const input = countInput(texts, texts.length);
  const id = nextId('msg_');
  const modelJson = JSON.stringify(model);
  if (ex.stream) return startStream(ex, new MessagesStream(id, modelJson, p, toolInput, input, d.noUsage), d);
  const block =
    p.tool === null
      ? `{"type":"text","text":${answerJson(p.chunks)}}`
      : `{"type":"tool_use","id":"${nextId('toolu_')}","name":${JSON.stringify(p.tool)},"input":${p.cut ? '{}' : toolInput.json}}`;
  const usage = d.noUsage ? '' : `,"usage":${usageJson(input, p.chunks)}`;
  ex.answer(
    `{"id":"${id}","type":"message","role":"assistant","model":${modelJson},"content":[${block}],"stop_reason":"${stopReason(p)}","stop_sequence":null${usage}}`,
    d,
  );
}

class MessagesStream implements StreamSource {
  readonly count: number;

  constructor(
    private readonly id: string,
    private readonly modelJson: string,
    private readonly p: Plan,
    private readonly toolInput: ToolInput,
    private readonly input: number,
    private readonly noUsage: boolean,
  ) {
    this.count = p.chunks;
  }

  head(): string {
    // The opening usage counts one output token, as Anthropic's does.
    const usage = this.noUsage ? '' : `,"usage":${usageJson(this.input, 1)}`;
    const block =
      this.p.tool === null
        ? '{"type":"text","text":""}'
        : `{"type":"tool_use","id":"${nextId('toolu_')}","name":${JSON.stringify(this.p.tool)},"input":{}}`;
    return (
      `${eventPrefix('message_start')}{"type":"message_start","message":{"id":"${this.id}","type":"message","role":"assistant","model":${this.modelJson},"content":[],"stop_reason":null,"stop_sequence":null${usage}}}\n\n` +
      `${eventPrefix('content_block_start')}{"type":"content_block_start","index":0,"content_block":${block}}\n\n` +
      PING
    );
  }

  chunk(i: number): string {
    return this.p.tool === null
      ? `${TEXT_DELTA}${wordChunkJson(i)}}}\n\n`
      : `${JSON_DELTA}${this.toolInput.fragments[i] as string}}}\n\n`;
  }

  tail(): string {
    const usage = this.noUsage ? '' : `,"usage":{"output_tokens":${this.p.chunks}}`;
    return (
      BLOCK_STOP +
      `${eventPrefix('message_delta')}{"type":"message_delta","delta":{"stop_reason":"${stopReason(this.p)}","stop_sequence":null}${usage}}\n\n` +
      MESSAGE_STOP
    );
  }
}
