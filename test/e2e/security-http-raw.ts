// A raw HTTP/1.1 conversation for the issue 30 HTTP tests: bytes written on
// one connection (optionally in several writes, some after a pause), then
// everything the gateway sends until it closes the connection or the time
// runs out. fetch cannot send two Content-Length headers, an HTTP/1.0
// request line or headers without their body.
import { connect } from 'node:net';
import { readFileSync } from 'node:fs';

export interface Conversation {
  /** Everything received, as latin1. */
  text: string;
  /** The status of each response seen, in order (no body the gateway sends contains a status line). */
  statuses: number[];
  /** ms from the first write to the first byte received; null when none came. */
  firstByteMs: number | null;
  /** ms from the first write to the gateway closing the connection; null when it was still open at the deadline. */
  closedMs: number | null;
  /** The response headers of the first response (lower-case names). */
  headers: Record<string, string>;
}

export type Step = string | Buffer | { pauseMs: number };

export function converse(port: number, steps: Step[], timeoutMs = 5000): Promise<Conversation> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const started = performance.now();
    let buf = Buffer.alloc(0);
    let firstByteMs: number | null = null;
    let done = false;
    const finish = (closed: boolean): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      const text = buf.toString('latin1');
      const statuses = [...text.matchAll(/HTTP\/1\.[01] (\d{3}) /g)].map((m) => Number(m[1]));
      const head = text.slice(0, Math.max(0, text.indexOf('\r\n\r\n')));
      const headers: Record<string, string> = {};
      for (const line of head.split('\r\n').slice(1)) {
        const i = line.indexOf(':');
        if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
      }
      resolve({ text, statuses, firstByteMs, closedMs: closed ? performance.now() - started : null, headers });
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    socket.on('data', (d: Buffer) => {
      firstByteMs ??= performance.now() - started;
      buf = Buffer.concat([buf, d]);
    });
    socket.on('close', () => finish(true));
    // A write after the gateway closed fails: what it sent is still read.
    socket.on('error', () => {});
    void (async () => {
      for (const step of steps) {
        if (done || socket.destroyed) return;
        if (typeof step === 'object' && !Buffer.isBuffer(step)) await new Promise((r) => setTimeout(r, step.pauseMs));
        else socket.write(step);
      }
    })();
  });
}

/** A request head (request line and headers) with its blank line. */
export function head(requestLine: string, headers: Array<[string, string | number]>): string {
  return [requestLine, ...headers.map(([k, v]) => `${k}: ${v}`)].join('\r\n') + '\r\n\r\n';
}

/** Resident memory of a process, in bytes. */
export function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m === null ? 0 : Number(m[1]) * 1024;
}
