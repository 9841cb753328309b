// Messages stream: each upstream event is parsed once and written as the
// gateway's own. message_start carries the gateway's request id and the
// model as the caller named it; text and tool_use blocks pass with their
// deltas (renumbered when a block of another kind, e.g. thinking, is left
// out); the upstream's message_delta and message_stop are held back and
// written by finish() after settlement, so message_delta carries the settled
// usage, equal to what the unary reply carries. A failure after the first
// event is an `error` event and no message_stop.
import type { Metered, Outcome } from '../../billing/types.js';
import { renderError } from '../../errors/envelopes.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { SseEvent } from '../../suppliers/sse-reader.js';
import type { CallInfo, StreamTranscoder } from '../surface.js';
import { meter, normalizeStop, supplierUsage, usageJson, type SupplierUsage } from './usage.js';

type Json = Record<string, any>;

const PING = 'event: ping\ndata: {"type":"ping"}\n\n';
const MESSAGE_STOP = 'event: message_stop\ndata: {"type":"message_stop"}\n\n';

function frame(type: string, json: string): string {
  return `event: ${type}\ndata: ${json}\n\n`;
}

export class MessagesStream implements StreamTranscoder {
  complete = false;
  private readonly call: CallInfo;
  private started = false;
  /** Usage stated on message_start (the input half), then updated by message_delta. */
  private usage: SupplierUsage | null = null;
  private outputKnown = false;
  private stopReason: string | null = null;
  private stopSequence: string | null = null;
  /** Upstream block index → ours, for the blocks passed on. */
  private readonly blocks = new Map<number, number>();
  private produced = '';
  private upstreamError: string | null = null;

  constructor(call: CallInfo) {
    this.call = call;
  }

  event(ev: SseEvent): string {
    let data: Json;
    try {
      data = JSON.parse(ev.data) as Json;
    } catch {
      this.upstreamError = 'api_error';
      return '';
    }
    if (data === null || typeof data !== 'object') return '';
    switch (data.type) {
      case 'message_start':
        return this.start(data.message);
      case 'content_block_start':
        return this.blockStart(data);
      case 'content_block_delta':
        return this.blockDelta(data);
      case 'content_block_stop': {
        const index = this.blocks.get(data.index);
        return index === undefined ? '' : frame('content_block_stop', `{"type":"content_block_stop","index":${index}}`);
      }
      case 'message_delta':
        this.delta(data);
        return '';
      case 'message_stop':
        this.complete = this.started && this.upstreamError === null;
        return '';
      case 'ping':
        return this.started ? PING : '';
      case 'error':
        this.upstreamError = data.error?.type === 'overloaded_error' ? 'overloaded_error' : 'api_error';
        return '';
      default:
        return '';
    }
  }

  private start(message: Json | undefined): string {
    if (this.started) return '';
    this.started = true;
    const u = message?.usage;
    if (u !== null && typeof u === 'object') this.usage = supplierUsage(u);
    const half = this.usage ?? { input: 0, cacheWrite: 0, cacheRead: 0, output: 0 };
    // The input half as the supplier stated it on opening; output is settled on message_delta.
    const usage = `{"input_tokens":${half.input},"cache_creation_input_tokens":${half.cacheWrite},"cache_read_input_tokens":${half.cacheRead},"output_tokens":0}`;
    return frame(
      'message_start',
      `{"type":"message_start","message":{"id":${JSON.stringify(this.call.requestId)},"type":"message","role":"assistant",` +
        `"model":${JSON.stringify(this.call.model)},"content":[],"stop_reason":null,"stop_sequence":null,"usage":${usage}}}`,
    );
  }

  private blockStart(data: Json): string {
    const b = data.content_block;
    if (!this.started || b === null || typeof b !== 'object' || typeof data.index !== 'number') return '';
    let block: string;
    if (b.type === 'text') block = '{"type":"text","text":""}';
    else if (b.type === 'tool_use') block = `{"type":"tool_use","id":${JSON.stringify(String(b.id ?? ''))},"name":${JSON.stringify(String(b.name ?? ''))},"input":{}}`;
    else return '';
    const index = this.blocks.size;
    this.blocks.set(data.index, index);
    return frame('content_block_start', `{"type":"content_block_start","index":${index},"content_block":${block}}`);
  }

  private blockDelta(data: Json): string {
    const index = this.blocks.get(data.index);
    const d = data.delta;
    if (index === undefined || d === null || typeof d !== 'object') return '';
    let delta: string;
    if (d.type === 'text_delta' && typeof d.text === 'string') {
      this.produced += d.text;
      delta = `{"type":"text_delta","text":${JSON.stringify(d.text)}}`;
    } else if (d.type === 'input_json_delta' && typeof d.partial_json === 'string') {
      this.produced += d.partial_json;
      delta = `{"type":"input_json_delta","partial_json":${JSON.stringify(d.partial_json)}}`;
    } else {
      return '';
    }
    return frame('content_block_delta', `{"type":"content_block_delta","index":${index},"delta":${delta}}`);
  }

  /** Stop reason, and the usage so far: output_tokens always, input members when the supplier restates them (cumulative, overwrite). */
  private delta(data: Json): void {
    const d = data.delta;
    if (d !== null && typeof d === 'object') {
      if (d.stop_reason !== undefined && d.stop_reason !== null) this.stopReason = normalizeStop(d.stop_reason);
      if (typeof d.stop_sequence === 'string') this.stopSequence = d.stop_sequence;
    }
    const u = data.usage;
    if (u === null || typeof u !== 'object' || this.usage === null) return;
    if (typeof u.output_tokens === 'number') {
      this.usage.output = supplierUsage(u).output;
      this.outputKnown = true;
    }
    const restated = supplierUsage(u);
    if (u.input_tokens != null) this.usage.input = restated.input;
    if (u.cache_creation_input_tokens != null) this.usage.cacheWrite = restated.cacheWrite;
    if (u.cache_read_input_tokens != null) this.usage.cacheRead = restated.cacheRead;
  }

  /** The supplier's usage once both halves are known; else null (the pipeline counts locally). */
  metered(): Metered | null {
    return this.usage !== null && this.outputKnown ? meter(this.usage) : null;
  }

  outcome(): Outcome {
    return this.complete && this.stopReason !== null && this.stopReason !== 'max_tokens' ? 'completed' : 'incomplete';
  }

  producedText(): string {
    return this.produced;
  }

  /** message_delta with the settled usage, then message_stop. */
  finish(settled: Metered): string {
    const stop = this.stopReason ?? 'end_turn';
    return (
      frame(
        'message_delta',
        `{"type":"message_delta","delta":{"stop_reason":"${stop}","stop_sequence":${JSON.stringify(this.stopSequence)}},` +
          `"usage":${usageJson(settled)}}`,
      ) + MESSAGE_STOP
    );
  }

  /** An `error` event in the messages envelope; the stream then ends without message_stop. */
  failure(): string {
    const err = new GatewayError(this.upstreamError === 'overloaded_error' ? 'upstream_overloaded' : 'upstream_error');
    return frame('error', renderError('messages', err, this.call.requestId));
  }
}
