// Output items as the gateway writes them: the five types of the spec, each
// with only the members the spec lists (a supplier's extra members, e.g.
// logprobs, are not passed on) plus what OpenAI's clients require of them:
// every item has an id (the supplier's, or one the gateway makes from the
// request id), every output_text part has its annotations (an array; []
// when the supplier gave none). Pure; shared by the unary reply and the
// stream, so a streamed answer's final snapshot and the unary reply agree.

type Json = Record<string, any>;

export type OutputItem = Json;

const ITEM_TYPES = new Set(['message', 'function_call', 'custom_tool_call', 'web_search_call', 'reasoning']);
const PART_TYPES = new Set(['output_text', 'refusal', 'summary_text', 'reasoning_text']);
const STRING_MEMBERS = ['id', 'status', 'call_id', 'name', 'namespace', 'arguments', 'input', 'encrypted_content'] as const;

export function isObject(v: unknown): v is Json {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** A content part: its type and its text (or refusal); null for a kind the spec does not name. */
export function outputPart(raw: unknown): Json | null {
  if (!isObject(raw) || !PART_TYPES.has(raw.type)) return null;
  if (raw.type === 'refusal') return { type: 'refusal', refusal: typeof raw.refusal === 'string' ? raw.refusal : '' };
  const part: Json = { type: raw.type, text: typeof raw.text === 'string' ? raw.text : '' };
  if (raw.type === 'output_text') part.annotations = annotations(raw.annotations);
  return part;
}

/** A supplier's citations (objects with a type) pass; anything else is dropped. */
function annotations(raw: unknown): Json[] {
  const out: Json[] = [];
  if (Array.isArray(raw)) for (const a of raw) if (isObject(a) && typeof a.type === 'string') out.push(a);
  return out;
}

function parts(raw: unknown): Json[] {
  const out: Json[] = [];
  if (Array.isArray(raw)) for (const p of raw) {
    const part = outputPart(p);
    if (part !== null) out.push(part);
  }
  return out;
}

/** The gateway's copy of a supplier's output item, or null when its type is not one the spec names. */
export function outputItem(raw: unknown): OutputItem | null {
  if (!isObject(raw) || !ITEM_TYPES.has(raw.type)) return null;
  const item: Json = { type: raw.type };
  for (const m of STRING_MEMBERS) if (typeof raw[m] === 'string') item[m] = raw[m];
  if (raw.type === 'message') {
    item.role = 'assistant';
    item.content = parts(raw.content);
  } else if (raw.type === 'reasoning') {
    item.summary = parts(raw.summary);
    if (Array.isArray(raw.content)) item.content = parts(raw.content);
  } else if (raw.type === 'web_search_call' && isObject(raw.action)) {
    item.action = raw.action;
  }
  // The stream's delta events append to these: an opened item starts them empty.
  if (raw.type === 'function_call' && item.arguments === undefined) item.arguments = '';
  if (raw.type === 'custom_tool_call' && item.input === undefined) item.input = '';
  return item;
}

const ID_PREFIX: Record<string, string> = {
  message: 'msg', function_call: 'fc', custom_tool_call: 'ctc', web_search_call: 'ws', reasoning: 'rs',
};

/**
 * The id of an item the supplier gave none: unique in the response (its
 * position) and across responses (the request id). OpenAI's clients match
 * each stream event's item_id to it, and the AI SDK requires it.
 */
export function itemId(item: OutputItem, requestId: string, index: number): string {
  return `${ID_PREFIX[item.type] ?? 'item'}_${requestId.replace(/^req_/, '')}_${index}`;
}

/** Gives every item without an id its own (in place; the items are the gateway's copies). */
export function withIds(items: OutputItem[], requestId: string): OutputItem[] {
  for (let i = 0; i < items.length; i++) if (typeof items[i]!.id !== 'string' || items[i]!.id === '') items[i]!.id = itemId(items[i]!, requestId, i);
  return items;
}

/** What an item produced, for a local count when the supplier reported no usage. */
export function producedText(item: OutputItem): string {
  let text = '';
  for (const p of [...(item.content ?? []), ...(item.summary ?? [])] as Json[]) text += p.text ?? p.refusal ?? '';
  if (typeof item.arguments === 'string') text += item.arguments;
  if (typeof item.input === 'string') text += item.input;
  return text;
}
