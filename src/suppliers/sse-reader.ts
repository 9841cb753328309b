// Incremental parser of a supplier's text/event-stream: bytes in, events out.
// Only `event:` and `data:` fields matter to us; comments and ids are skipped.
// Multi-line data is joined with \n as the SSE spec says.

export interface SseEvent {
  event: string | null;
  data: string;
}

export class SseReader {
  private buffer = '';
  private readonly decoder = new TextDecoder();

  /** Feeds one chunk; returns the events it completed (often one). */
  push(chunk: Uint8Array): SseEvent[] {
    this.buffer += this.decoder.decode(chunk, { stream: true });
    const out: SseEvent[] = [];
    for (;;) {
      const end = this.frameEnd();
      if (end === null) break;
      const frame = this.buffer.slice(0, end.at);
      this.buffer = this.buffer.slice(end.at + end.length);
      const ev = parseFrame(frame);
      if (ev !== null) out.push(ev);
    }
    return out;
  }

  /** Whatever is left when the body ended without a blank line. */
  flush(): SseEvent | null {
    const rest = this.buffer + this.decoder.decode();
    this.buffer = '';
    return rest.trim() === '' ? null : parseFrame(rest);
  }

  private frameEnd(): { at: number; length: number } | null {
    const lf = this.buffer.indexOf('\n\n');
    const crlf = this.buffer.indexOf('\r\n\r\n');
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
