// Incremental parser of a supplier's text/event-stream: bytes in, events out.
// Only `event:` and `data:` fields matter to us; comments and ids are skipped.
// Multi-line data is joined with \n as the SSE spec says.
//
// One event may not grow past `maxEventBytes` (suppliers.max_event_bytes):
// a supplier that never sends a blank line would otherwise grow the buffer
// without bound. The search for the blank line resumes where the last chunk's
// search stopped, so a long event costs linear time, not quadratic.
import { ReplyTooLarge } from './reply-limits.js';

export interface SseEvent {
  event: string | null;
  data: string;
}

export class SseReader {
  private buffer = '';
  /** Where the search for a blank line resumes: none ends before it. */
  private scanned = 0;
  /**
   * Text length below which no check of the byte size is needed: UTF-8 takes
   * at most 3 bytes per UTF-16 unit, so up to a third of the bound is safe.
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
    this.buffer += this.decoder.decode(chunk, { stream: true });
    const out: SseEvent[] = [];
    for (;;) {
      const end = this.frameEnd();
      if (end === null) break;
      const frame = this.buffer.slice(0, end.at);
      this.buffer = this.buffer.slice(end.at + end.length);
      this.scanned = 0;
      if (frame.length > this.surelyUnder) this.bound(frame);
      const ev = parseFrame(frame);
      if (ev !== null) out.push(ev);
    }
    if (this.buffer.length > this.surelyUnder) this.bound(this.buffer);
    // A blank line may straddle this chunk and the next: rescan its last 3 characters.
    this.scanned = this.buffer.length > 3 ? this.buffer.length - 3 : 0;
    return out;
  }

  /** Whatever is left when the body ended without a blank line. */
  flush(): SseEvent | null {
    const rest = this.buffer + this.decoder.decode();
    this.buffer = '';
    this.scanned = 0;
    return rest.trim() === '' ? null : parseFrame(rest);
  }

  private bound(text: string): void {
    if (Buffer.byteLength(text, 'utf8') <= this.maxEventBytes) return;
    this.buffer = '';
    this.scanned = 0;
    throw new ReplyTooLarge(this.maxEventBytes);
  }

  private frameEnd(): { at: number; length: number } | null {
    const lf = this.buffer.indexOf('\n\n', this.scanned);
    const crlf = this.buffer.indexOf('\r\n\r\n', this.scanned);
    if (lf < 0 && crlf < 0) return null;
    if (crlf >= 0 && (lf < 0 || crlf < lf)) return { at: crlf, length: 4 };
    return { at: lf, length: 2 };
  }
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
