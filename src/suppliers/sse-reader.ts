// Incremental parser of a supplier's text/event-stream: bytes in, events out.
// Only `event:` and `data:` fields matter to us; comments and ids are skipped.
// Multi-line data is joined with \n as the SSE spec says.
//
// One event may not grow past `maxEventBytes` (suppliers.max_event_bytes):
// a supplier that never sends a blank line would otherwise grow the buffer
// without bound. While an event spans chunks, only each new chunk (and the 3
// characters before it, where a blank line may begin) is searched for its
// end: searching the whole buffer again per chunk would flatten and scan it
// each time, quadratic in the event's length.
import { ReplyTooLarge } from './reply-limits.js';

export interface SseEvent {
  event: string | null;
  data: string;
}

export class SseReader {
  /** Text of the event not yet ended. */
  private buffer = '';
  /** The buffer's last (up to) 3 characters. */
  private tail = '';
  /** An upper bound of the buffer's UTF-8 size; made exact when it crosses the bound. */
  private bufferBytes = 0;
  /**
   * Text length below which no exact byte count is needed: UTF-8 takes at
   * most 3 bytes per UTF-16 unit, so up to a third of the bound is safe.
   */
  private readonly surelyUnder: number;
  private readonly decoder = new TextDecoder();

  constructor(private readonly maxEventBytes: number) {
    this.surelyUnder = Math.floor(maxEventBytes / 3);
  }

  /**
   * Feeds one chunk; returns the events it completed (often one). Throws
   * ReplyTooLarge, and lets go of what it buffered, when an event is over
   * the bound.
   */
  push(chunk: Uint8Array): SseEvent[] {
    const text = this.decoder.decode(chunk, { stream: true });
    const out: SseEvent[] = [];
    let buffer = this.buffer;
    let from = 0;
    if (buffer.length === 0) {
      buffer = text;
    } else if (frameEnd(text, 0) < 0 && frameEnd(this.tail + text.slice(0, 3), 0) < 0) {
      // The event goes on: append, search nothing more.
      this.buffer = buffer + text;
      this.tail = text.length >= 3 ? text.slice(-3) : (this.tail + text).slice(-3);
      this.bufferBytes += chunk.length;
      if (this.bufferBytes > this.maxEventBytes) this.bound();
      return out;
    } else {
      from = buffer.length > 3 ? buffer.length - 3 : 0;
      buffer += text;
    }
    for (;;) {
      const end = frameEnd(buffer, from);
      if (end < 0) break;
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + (buffer.charCodeAt(end) === 13 ? 4 : 2));
      from = 0;
      if (frame.length > this.surelyUnder && Buffer.byteLength(frame, 'utf8') > this.maxEventBytes) this.tooLarge();
      const ev = parseFrame(frame);
      if (ev !== null) out.push(ev);
    }
    this.buffer = buffer;
    if (buffer.length > 0) {
      this.tail = buffer.length > 3 ? buffer.slice(-3) : buffer;
      this.bufferBytes = buffer.length * 3;
      if (this.bufferBytes > this.maxEventBytes) this.bound();
    }
    return out;
  }

  /**
   * Whatever is left when the body ended without a blank line. The SSE spec
   * drops such an event; we hand it on on purpose: a supplier that ends its
   * last event (`data: [DONE]`, a terminal `message_stop`) with one newline
   * or none still completes its stream, and a body cut mid-event leaves
   * JSON that does not parse, which the surface's transcoder refuses.
   */
  flush(): SseEvent | null {
    const rest = this.buffer + this.decoder.decode();
    this.buffer = '';
    return rest.trim() === '' ? null : parseFrame(rest);
  }

  /** The size estimate crossed the bound: count exactly, refuse if over. */
  private bound(): void {
    const bytes = Buffer.byteLength(this.buffer, 'utf8');
    if (bytes > this.maxEventBytes) this.tooLarge();
    this.bufferBytes = bytes;
  }

  private tooLarge(): never {
    this.buffer = '';
    throw new ReplyTooLarge(this.maxEventBytes);
  }
}

/** Index of the first blank line (\n\n or \r\n\r\n) at or after `from`, or -1. */
function frameEnd(buffer: string, from: number): number {
  const lf = buffer.indexOf('\n\n', from);
  const crlf = buffer.indexOf('\r\n\r\n', from);
  if (crlf >= 0 && (lf < 0 || crlf < lf)) return crlf;
  return lf;
}

function parseFrame(frame: string): SseEvent | null {
  let event: string | null = null;
  let data: string | null = null;
  for (const raw of frame.split('\n')) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') event = value;
    else if (field === 'data') data = data === null ? value : data + '\n' + value;
  }
  return data === null ? null : { event, data };
}
