// The count_tokens estimate: deterministic, local, and monotone — a sum of
// non-negative parts, one per segment the model reads (each block of the
// system prompt and of every message, each tool, the tool choice), so adding
// a message, a block, a tool or a system prompt never lowers it. Each segment's text is counted
// with tiktoken's o200k_base (encode_ordinary, in the worker-thread pool);
// to it come fixed overheads for the framing a model adds around each part.
// The figures are documented in docs/api/messages.md; change both together.
import { GatewayError } from '../../errors/gateway-error.js';
import { contentPieces, toolText, type MediaCount } from '../messages/content.js';
import { checkTools } from '../messages/prepare.js';
import { assertValid, compile } from '../validate.js';
import { countTokensRequestSchema } from './schema.js';

/** Priming of the reply, once per call. */
export const TOKENS_PER_CALL = 3;
/** Role and turn separators around each message, and around the system prompt when there is one. */
export const TOKENS_PER_MESSAGE = 4;
/** Framing of each declared tool, beyond its name, description and schema. */
export const TOKENS_PER_TOOL = 8;
/** Instructions a model receives on how to call tools, once when any tool is declared. */
export const TOOLS_PREAMBLE_TOKENS = 346;

/** A decoded count request: plain data, so the pool can produce it for a large body. */
export interface CountRequest {
  model: string;
  /** Each segment's text, counted separately (the estimate is additive over them). */
  texts: string[];
  /** Overheads and the stated figures of images and documents. */
  fixed: number;
  /** The texts' tokens, once counted where the body was decoded (then `texts` is emptied); null until then. */
  counted: number | null;
}

const validate = compile(countTokensRequestSchema);

type Body = Record<string, any>;

export function decodeCountTokens(raw: unknown, _bodyBytes: number): CountRequest {
  assertValid(validate, raw);
  const body = raw as Body;
  checkTools(body);
  const texts: string[] = [];
  const media: MediaCount = { tokens: 0, chars: 0 };
  let fixed = TOKENS_PER_CALL;
  if (body.system !== undefined) {
    contentPieces(body.system, media, texts);
    fixed += TOKENS_PER_MESSAGE;
  }
  for (const m of body.messages as Body[]) {
    contentPieces(m.content, media, texts);
    fixed += TOKENS_PER_MESSAGE;
  }
  const tools = (body.tools ?? []) as Body[];
  for (const tool of tools) {
    texts.push(toolText(tool));
    fixed += TOKENS_PER_TOOL;
  }
  if (tools.length > 0) fixed += TOOLS_PREAMBLE_TOKENS;
  if (body.tool_choice !== undefined) texts.push(JSON.stringify(body.tool_choice));
  fixed += media.tokens;
  if (!Number.isSafeInteger(fixed)) throw new GatewayError('invalid_request', { param: 'messages' });
  return { model: body.model, texts, fixed, counted: null };
}

/** The request with its texts counted (the texts dropped: only the sum crosses threads). */
export async function countTexts(request: CountRequest, countTokens: (texts: string[]) => Promise<number[]>): Promise<CountRequest> {
  let counted = 0;
  if (request.texts.length > 0) for (const n of await countTokens(request.texts)) counted += n;
  return { model: request.model, texts: [], fixed: request.fixed, counted };
}

/** The estimate of a counted request: the fixed part plus the texts' tokens. */
export function estimateOf(request: CountRequest): number {
  return request.fixed + (request.counted ?? 0);
}
