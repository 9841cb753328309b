// Responses stream: each upstream event is parsed once and written as the
// gateway's own, with the gateway's sequence_number (0, 1, 2, … on every
// event it sends; the supplier's numbers are never passed on, since events
// the spec does not list are left out). response.created (then
// response.in_progress) carries the gateway's id and the model as the caller
// named it; items of the five output types pass with their deltas
// (output_index renumbered when an item of another type is left out). Every
// item-scoped event names its item (item_id, the item's id as opened), and
// each delta's run ends with its .done event carrying what the deltas
// assembled, as OpenAI's clients check (docs/api/responses.md, "Stream").
// The supplier's terminal event is held back: finish() writes
// response.completed after settlement, with the settled usage; failure()
// writes response.failed. The pipeline calls exactly one of them, so a
// stream has exactly one terminal event, whatever the supplier did.
import type { Metered, Outcome } from '../../billing/types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { SseEvent } from '../../suppliers/sse-reader.js';
import type { CallInfo, StreamTranscoder } from '../surface.js';
import { isObject, itemId, outputItem, outputPart, producedText, withIds, type OutputItem } from './items.js';
import { finishedJson, headJson, incompleteReason } from './reply.js';
import { meter, supplierUsage, type SupplierUsage } from './usage.js';

type Json = Record<string, any>;

const WEB_SEARCH_STATUS: Record<string, string> = {
  'response.web_search_call.in_progress': 'in_progress',
  'response.web_search_call.searching': 'searching',
  'response.web_search_call.completed': 'completed',
};

function isIndex(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

export class ResponsesStream implements StreamTranscoder {
  complete = false;
  private readonly head: string;
  private readonly requestId: string;
  private seq = 0;
  private started = false;
  /** The supplier sent its terminal event (completed, incomplete or failed): anything after it is ignored. */
  private ended = false;
  private failed = false;
  /** Our output items, in our order: opened on output_item.added, replaced when done. */
  private readonly items: OutputItem[] = [];
  /** Upstream output_index → ours, for the items passed on. */
  private readonly index = new Map<number, number>();
  /** Per item of ours: what it produced so far (deltas; the whole item once done). */
  private readonly produced: string[] = [];
  /** Per message content part ("item:part"): the text or refusal its deltas assembled, for its .done event. */
  private readonly partText = new Map<string, string>();
  /** The output of the supplier's terminal snapshot, used when it streamed no items. */
  private finalOutput: OutputItem[] = [];
  private reason: string | null = null;
  private usage: SupplierUsage | null = null;

  /** `created`: called as response.created is made, just before it is sent (responses records the id's owner there). */
  constructor(
    call: CallInfo,
    private readonly created: () => void = () => {},
  ) {
    this.head = headJson(call);
    this.requestId = call.requestId;
  }

  private emit(type: string, body: string): string {
    return `event: ${type}\ndata: {"type":"${type}","sequence_number":${this.seq++},${body}}\n\n`;
  }

  /** response.created and response.in_progress, once, before anything else the client sees. */
  private open(): string {
    if (this.started) return '';
    this.started = true;
    this.created();
    const opening = `"response":${this.head},"status":"in_progress","output":[]}`;
    return this.emit('response.created', opening) + this.emit('response.in_progress', opening);
  }

  /** The members that place an item-scoped event: its item (index and id). */
  private placed(at: number): string {
    return `"output_index":${at},"item_id":${JSON.stringify(this.items[at]!.id)}`;
  }

  event(ev: SseEvent): string {
    if (this.ended) return '';
    let data: Json;
    try {
      data = JSON.parse(ev.data) as Json;
    } catch {
      this.fail();
      return '';
    }
    if (!isObject(data)) return '';
    const type = data.type;
    switch (type) {
      case 'response.created':
        return this.open();
      case 'response.output_item.added':
        return this.itemAdded(data);
      case 'response.output_item.done':
        return this.itemDone(data);
      case 'response.content_part.added':
      case 'response.content_part.done':
        return this.part(type, data);
      case 'response.output_text.delta':
      case 'response.refusal.delta':
        return this.partDelta(type, data);
      case 'response.output_text.done':
      case 'response.refusal.done':
        return this.partDone(type, data);
      case 'response.function_call_arguments.delta':
        return this.delta(type, data, 'function_call');
      case 'response.custom_tool_call_input.delta':
        return this.delta(type, data, 'custom_tool_call');
      case 'response.function_call_arguments.done':
        return this.argumentsDone(type, data, 'function_call', 'arguments');
      case 'response.custom_tool_call_input.done':
        return this.argumentsDone(type, data, 'custom_tool_call', 'input');
      case 'response.web_search_call.in_progress':
      case 'response.web_search_call.searching':
      case 'response.web_search_call.completed':
        return this.search(type, data);
      case 'response.completed':
      case 'response.incomplete':
        this.terminal(data.response);
        return '';
      case 'response.failed':
      case 'error':
        this.fail();
        return '';
      default:
        // response.in_progress (written by open()), reasoning deltas (the
        // reasoning item arrives whole on output_item.done), and anything newer.
        return '';
    }
  }

  private fail(): void {
    this.ended = true;
    this.failed = true;
  }

  private ours(data: Json, type?: string): number | undefined {
    const at = typeof data.output_index === 'number' ? this.index.get(data.output_index) : undefined;
    return at === undefined || (type !== undefined && this.items[at]!.type !== type) ? undefined : at;
  }

  private itemAdded(data: Json): string {
    const item = outputItem(data.item);
    if (item === null || typeof data.output_index !== 'number' || this.index.has(data.output_index)) return '';
    const at = this.items.length;
    if (typeof item.id !== 'string' || item.id === '') item.id = itemId(item, this.requestId, at);
    this.index.set(data.output_index, at);
    this.items.push(item);
    this.produced.push('');
    return this.open() + this.emit('response.output_item.added', `"output_index":${at},"item":${JSON.stringify(item)}`);
  }

  private itemDone(data: Json): string {
    const at = this.ours(data);
    const item = outputItem(data.item);
    if (at === undefined || item === null || item.type !== this.items[at]!.type) return '';
    // The finished item keeps the id it was opened with: clients match the two.
    item.id = this.items[at]!.id;
    this.items[at] = item;
    this.produced[at] = producedText(item);
    return this.emit('response.output_item.done', `"output_index":${at},"item":${JSON.stringify(item)}`);
  }

  /** A message's content part: opened with no text, then assembled (a reasoning item's parts arrive with the item). */
  private part(type: string, data: Json): string {
    const at = this.ours(data, 'message');
    const part = outputPart(data.part);
    if (at === undefined || part === null || !isIndex(data.content_index)) return '';
    if (type === 'response.content_part.added') {
      if (part.type === 'refusal') part.refusal = '';
      else part.text = '';
      if (part.type === 'output_text') part.annotations = [];
      this.partText.set(`${at}:${data.content_index}`, '');
    }
    return this.emit(type, `${this.placed(at)},"content_index":${data.content_index},"part":${JSON.stringify(part)}`);
  }

  /** Text or refusal of a message's part; output_text deltas carry their (empty) logprobs, as OpenAI's do. */
  private partDelta(type: string, data: Json): string {
    const at = this.ours(data, 'message');
    if (at === undefined || typeof data.delta !== 'string' || !isIndex(data.content_index)) return '';
    const key = `${at}:${data.content_index}`;
    this.partText.set(key, (this.partText.get(key) ?? '') + data.delta);
    this.produced[at] += data.delta;
    const logprobs = type === 'response.output_text.delta' ? ',"logprobs":[]' : '';
    return this.emit(type, `${this.placed(at)},"content_index":${data.content_index},"delta":${JSON.stringify(data.delta)}${logprobs}`);
  }

  /** The end of a part's deltas, with what they assembled. */
  private partDone(type: string, data: Json): string {
    const at = this.ours(data, 'message');
    if (at === undefined || !isIndex(data.content_index)) return '';
    const text = JSON.stringify(this.partText.get(`${at}:${data.content_index}`) ?? '');
    const member = type === 'response.output_text.done' ? `"text":${text},"logprobs":[]` : `"refusal":${text}`;
    return this.emit(type, `${this.placed(at)},"content_index":${data.content_index},${member}`);
  }

  /** Argument text of a function call, or input of a custom tool call. */
  private delta(type: string, data: Json, itemType: string): string {
    const at = this.ours(data, itemType);
    if (at === undefined || typeof data.delta !== 'string') return '';
    this.produced[at] += data.delta;
    return this.emit(type, `${this.placed(at)},"delta":${JSON.stringify(data.delta)}`);
  }

  /** The end of a call's argument (or input) deltas: what they assembled; a function call's also names it. */
  private argumentsDone(type: string, data: Json, itemType: string, member: string): string {
    const at = this.ours(data, itemType);
    if (at === undefined) return '';
    const name = typeof this.items[at]!.name === 'string' ? `,"name":${JSON.stringify(this.items[at]!.name)}` : '';
    return this.emit(type, `${this.placed(at)}${itemType === 'function_call' ? name : ''},"${member}":${JSON.stringify(this.produced[at])}`);
  }

  /** The three web_search_call events carry the item with its search status. */
  private search(type: string, data: Json): string {
    const at = this.ours(data, 'web_search_call');
    if (at === undefined) return '';
    const item = { ...this.items[at], status: WEB_SEARCH_STATUS[type] };
    return this.emit(type, `${this.placed(at)},"item":${JSON.stringify(item)}`);
  }

  /** The supplier's completed or incomplete snapshot: status, reason, usage, and its output if it streamed none. */
  private terminal(response: unknown): void {
    this.ended = true;
    const r = isObject(response) ? response : {};
    const status = r.status ?? 'completed';
    if (status !== 'completed' && status !== 'incomplete') {
      this.failed = true;
      return;
    }
    if (status === 'incomplete') this.reason = incompleteReason(r);
    if (isObject(r.usage)) this.usage = supplierUsage(r.usage);
    if (Array.isArray(r.output)) {
      for (const raw of r.output as unknown[]) {
        const item = outputItem(raw);
        if (item !== null) this.finalOutput.push(item);
      }
    }
    this.complete = this.started;
  }

  metered(): Metered | null {
    return this.usage === null ? null : meter(this.usage);
  }

  outcome(): Outcome {
    return this.complete && !this.failed && this.reason === null ? 'completed' : 'incomplete';
  }

  producedText(): string {
    let text = '';
    for (const p of this.produced) text += p;
    if (this.items.length === 0) for (const item of this.finalOutput) text += producedText(item);
    return text;
  }

  /** response.completed (status incomplete when the bound was hit) with the whole output and the settled usage. */
  finish(settled: Metered): string {
    const output = this.items.length > 0 ? this.items : withIds(this.finalOutput, this.requestId);
    return this.emit('response.completed', `"response":${this.head},${finishedJson(output, this.reason, settled, this.usage?.reasoning ?? 0)}`);
  }

  /** response.failed: the snapshot with status failed and the error. */
  failure(): string {
    const err = new GatewayError('upstream_error');
    const error = JSON.stringify({ code: err.code, message: err.message, type: 'api_error' });
    return this.emit('response.failed', `"response":${this.head},"status":"failed","error":${error}}`);
  }
}
