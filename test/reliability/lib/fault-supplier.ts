// A supplier that misbehaves on request, standing where the gateway expects
// the simulator (SIMULATOR_URL): it forwards to a real simulator and breaks the
// exchange as a directive in the request asks, `[fault:KIND]` or
// `[fault:KIND=N]`, optionally scoped to one simulator instance with `@alpha`
// (as `[sim:...]` directives are). Whole-supplier faults (connection refused,
// connections that never complete) are switched by the caller.
//
// Kinds:
//   hang         accept the request, never answer (the gateway's headers timeout)
//   stall=N      forward the headers and N events (unary: nothing of the body), then go silent (body timeout)
//   reset=N      forward the headers and N events (unary: nothing of the body), then reset the connection (TCP RST)
//   nonewline    200 text/event-stream: one event without its terminating blank line, then end
//   badjson      200 text/event-stream: `data: {not json` as the first event
//   unknown      an event of a type no supplier sends before the real stream, which then goes on
//   notjson      200 application/json whose body is not JSON
//   errorbody    200 application/json carrying an error object instead of an answer
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';

export type FaultKind = 'hang' | 'stall' | 'reset' | 'nonewline' | 'badjson' | 'unknown' | 'notjson' | 'errorbody';

export interface FaultSupplier {
  /** What the gateway's SIMULATOR_URL is set to. */
  readonly url: string;
  readonly port: number;
  /** Requests broken so far, by kind (the report's "faults injected"). */
  readonly injected: Map<string, number>;
  /** Closes the listener and every connection: the gateway's connections are refused. */
  refuse(): Promise<void>;
  /** A listener that never accepts, its queue full: the gateway's connections time out. Linux only (python3). */
  blackhole(): Promise<void>;
  /** Back to forwarding. */
  restore(): Promise<void>;
  close(): Promise<void>;
}

const FAULT = /\[fault:([a-z]+)(?:=(\d+))?(?:@([a-z]+))?\]/g;

function faultIn(body: string, instance: string): { kind: FaultKind; n: number } | null {
  let found: { kind: FaultKind; n: number } | null = null;
  for (const m of body.matchAll(FAULT)) if (m[3] === undefined || m[3] === instance) found = { kind: m[1] as FaultKind, n: Number(m[2] ?? 0) };
  return found;
}

export async function startFaultSupplier(simulatorUrl: string): Promise<FaultSupplier> {
  const target = new URL(simulatorUrl);
  const injected = new Map<string, number>();
  const sockets = new Set<Socket>();
  let server: Server | null = null;
  let port = 0;
  let hole: { proc: ChildProcess; fillers: Socket[] } | null = null;

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const instance = (req.url ?? '/').split('/')[1] ?? '';
      const fault = faultIn(body.toString('utf8'), instance);
      if (fault !== null) injected.set(fault.kind, (injected.get(fault.kind) ?? 0) + 1);
      switch (fault?.kind) {
        case 'hang':
          return; // the socket stays open until the gateway gives up
        case 'nonewline':
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.end('data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"cut"}}]}');
          return;
        case 'badjson':
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.end('data: {not json\n\n');
          return;
        case 'notjson':
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('<html><body>502 Bad Gateway</body></html>');
          return;
        case 'errorbody':
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('{"error":{"message":"upstream exploded","type":"server_error","code":null}}');
          return;
      }
      const up = request(
        { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: { ...req.headers, 'content-length': String(body.length) } },
        (upRes) => {
          res.writeHead(upRes.statusCode ?? 502, upRes.headers);
          if (fault?.kind === 'unknown') res.write('event: tollgate_surprise\ndata: {"type":"tollgate_surprise"}\n\n');
          if (fault?.kind !== 'stall' && fault?.kind !== 'reset') {
            upRes.pipe(res);
            return;
          }
          // Pass N whole events through, then stall or reset.
          let events = 0;
          let pending = '';
          const cut = (): void => {
            upRes.destroy();
            // stall: keep the connection open and silent. reset: once what was written had time to be read (an RST discards unread data).
            if (fault.kind === 'reset') setTimeout(() => req.socket.resetAndDestroy(), fault.n === 0 ? 0 : 100);
          };
          // A unary reply has no events: stalled or reset before any of its body.
          if (fault.n === 0 || !String(upRes.headers['content-type'] ?? '').startsWith('text/event-stream')) return cut();
          upRes.on('data', (c: Buffer) => {
            if (events >= fault.n) return;
            pending += c.toString('utf8');
            let end: number;
            while (events < fault.n && (end = pending.indexOf('\n\n')) >= 0) {
              res.write(pending.slice(0, end + 2));
              pending = pending.slice(end + 2);
              events++;
            }
            if (events >= fault.n) cut();
          });
        },
      );
      up.on('error', () => res.destroy());
      res.on('close', () => up.destroy());
      up.end(body);
    });
  };

  const listen = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const s = createServer({ keepAliveTimeout: 60_000 }, handle);
      s.on('connection', (sock: Socket) => {
        sockets.add(sock);
        sock.on('close', () => sockets.delete(sock));
        sock.on('error', () => {});
      });
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => {
        port = (s.address() as { port: number }).port;
        server = s;
        resolve();
      });
    });
  const unlisten = (): Promise<void> =>
    new Promise((resolve) => {
      for (const s of sockets) s.destroy();
      sockets.clear();
      if (server === null) return resolve();
      server.close(() => resolve());
      server = null;
    });
  const unhole = async (): Promise<void> => {
    if (hole === null) return;
    for (const f of hole.fillers) f.destroy();
    const p = hole.proc;
    hole = null;
    if (p.exitCode === null) {
      const gone = new Promise((r) => p.once('exit', r));
      p.kill('SIGKILL');
      await gone;
    }
  };

  await listen();
  return {
    get url() {
      return `http://127.0.0.1:${port}`;
    },
    get port() {
      return port;
    },
    injected,
    async refuse() {
      await unhole();
      await unlisten();
      injected.set('refused', (injected.get('refused') ?? 0) + 1);
    },
    async blackhole() {
      await unlisten();
      // A socket listening with a backlog of zero that never accepts: once its queue holds a
      // connection or two, the kernel drops further SYNs and connects hang until their timeout.
      const proc = spawn('python3', ['-c', `import socket,time\ns=socket.socket()\ns.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\ns.bind(('127.0.0.1',${port}))\ns.listen(0)\nprint('ok',flush=True)\ntime.sleep(3600)`], {
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      await new Promise<void>((resolve, reject) => {
        proc.stdout!.once('data', () => resolve());
        proc.once('exit', (code) => reject(new Error(`python3 exited ${code}`)));
      });
      const fillers: Socket[] = [];
      for (let i = 0; i < 3; i++) {
        const f = connect(port, '127.0.0.1');
        f.on('error', () => {});
        fillers.push(f);
      }
      await new Promise((r) => setTimeout(r, 200));
      hole = { proc, fillers };
      injected.set('blackholed', (injected.get('blackholed') ?? 0) + 1);
    },
    async restore() {
      await unhole();
      if (server === null) await listen();
    },
    async close() {
      await unhole();
      await unlisten();
    },
  };
}
