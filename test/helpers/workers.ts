// What a test needs to see a worker crash from outside: the pids of the
// gateway's live worker processes (the primary's children, from /proc; a
// dead worker not yet reaped is a zombie and does not count), and raw HTTP
// requests for what fetch refuses to send (bad percent-encoding, NUL bytes).
import { readdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';

function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/** Live child processes of `primaryPid`, sorted. */
export function workerPids(primaryPid: number): number[] {
  const pids = new Set<number>();
  for (const task of readdirSync(`/proc/${primaryPid}/task`)) {
    let text = '';
    try {
      text = readFileSync(`/proc/${primaryPid}/task/${task}/children`, 'utf8');
    } catch {
      continue;
    }
    for (const p of text.split(' ')) if (p.trim() !== '') pids.add(Number(p));
  }
  return [...pids].filter(alive).sort((a, b) => a - b);
}

export interface RawAnswer {
  /** null when the connection closed without an answer (uWS's parser refuses some requests that way). */
  status: number | null;
  headers: Record<string, string>;
  body: string;
}

/** Sends `head` (request line and headers, without the blank line) and `body` on a new connection. */
export function rawRequest(port: number, head: string | Buffer, body: Buffer | string = '', timeoutMs = 10_000): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let buf = Buffer.alloc(0);
    let settled = false;
    const finish = (): void => {
      if (settled) return;
      settled = true;
      socket.destroy();
      resolve(parse(buf));
    };
    socket.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      const answer = parse(buf);
      const length = Number(answer.headers['content-length'] ?? NaN);
      if (answer.status !== null && Number.isFinite(length) && Buffer.byteLength(answer.body) >= length) finish();
    });
    socket.on('close', finish);
    socket.on('error', finish);
    socket.setTimeout(timeoutMs, finish);
    socket.write(Buffer.concat([Buffer.isBuffer(head) ? head : Buffer.from(head, 'latin1'), Buffer.from('\r\n\r\n'), Buffer.isBuffer(body) ? body : Buffer.from(body)]));
  });
}

function parse(buf: Buffer): RawAnswer {
  const text = buf.toString('utf8');
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return { status: null, headers: {}, body: '' };
  const [line, ...rest] = text.slice(0, end).split('\r\n');
  const m = /^HTTP\/1\.1 (\d{3})/.exec(line);
  const headers: Record<string, string> = {};
  for (const h of rest) {
    const i = h.indexOf(':');
    if (i > 0) headers[h.slice(0, i).trim().toLowerCase()] = h.slice(i + 1).trim();
  }
  return { status: m === null ? null : Number(m[1]), headers, body: text.slice(end + 4) };
}
