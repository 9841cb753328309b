// The simulator's HTTP server: one uWS app, instance name as the first path
// segment, one route per protocol.
import { readBody } from '../server/body.js';
import {
  App, assertNativeUws, closeListenSocket, listenSocketPort,
  type HttpRequest, type HttpResponse, type ListenSocket, type TemplatedApp,
} from '../server/uws.js';
import { handleChat } from './chat.js';
import { isRecord, type Json } from './common.js';
import { errorBody, type Dialect } from './errors.js';
import { Exchange, Hub, OPEN } from './exchange.js';
import { handleEmbeddings } from './embeddings.js';
import { handleImages, IMAGE_PATH, PNG } from './images.js';
import { handleMessages } from './messages.js';
import { handleResponses } from './responses.js';
import { loadEncoder } from './tokens.js';
import type { Protocol, Simulator, SimulatorListener, SimulatorOptions } from './types.js';

const MAX_BODY = 32 << 20;

interface Route {
  path: string;
  protocol: Protocol;
  dialect: Dialect;
  streams: boolean;
  handle: (ex: Exchange, req: Json, base: string) => void;
}

const ROUTES: readonly Route[] = [
  { path: '/v1/chat/completions', protocol: 'chat_completions', dialect: 'openai', streams: true, handle: handleChat },
  { path: '/v1/responses', protocol: 'responses', dialect: 'openai', streams: true, handle: handleResponses },
  { path: '/v1/messages', protocol: 'native_messages', dialect: 'anthropic', streams: true, handle: handleMessages },
  { path: '/v1/embeddings', protocol: 'embeddings', dialect: 'openai', streams: false, handle: handleEmbeddings },
  { path: '/v1/images/generations', protocol: 'images', dialect: 'openai', streams: false, handle: handleImages },
];

function accept(hub: Hub, route: Route, res: HttpResponse, req: HttpRequest, url: string): void {
  const instance = req.getParameter(0);
  const ex = new Exchange(hub, res, instance, route.protocol, route.dialect);
  ex.traceparent = req.getHeader('traceparent');
  res.onAborted(() => ex.aborted());
  readBody(res, req.getHeader('content-length'), MAX_BODY, (tooLarge, body) => {
    if (ex.state !== OPEN) return;
    const count = hub.counts.get(instance);
    if (count === undefined) return ex.fail(404, `no simulator instance '${instance}'`);
    hub.counts.set(instance, count + 1);
    hub.total++;
    ex.counted = true;
    if (tooLarge !== null) {
      hub.emit('request', ex);
      return ex.fail(413, 'request body too large');
    }
    let parsed: unknown;
    const text = body.toString();
    try {
      parsed = JSON.parse(text);
    } catch {
      hub.emit('request', ex);
      return ex.fail(400, 'We could not parse the JSON body of your request.');
    }
    if (!isRecord(parsed)) {
      hub.emit('request', ex);
      return ex.fail(400, 'the request body must be a JSON object');
    }
    ex.stream = route.streams && parsed.stream === true;
    hub.emit('request', ex, text);
    route.handle(ex, parsed, `${url}/${instance}`);
  });
}

function notFound(res: HttpResponse, req: HttpRequest): void {
  const body = errorBody('openai', 404, `no simulator route ${req.getMethod().toUpperCase()} ${req.getUrl()}`);
  res.writeStatus('404 Not Found').writeHeader('content-type', 'application/json').end(body);
}

class RunningSimulator implements Simulator {
  constructor(
    readonly url: string,
    readonly port: number,
    private readonly hub: Hub,
    private readonly app: TemplatedApp,
    private readonly socket: ListenSocket,
  ) {}

  on(listener: SimulatorListener): () => void {
    const hub = this.hub;
    hub.listeners = [...hub.listeners, listener];
    return () => {
      hub.listeners = hub.listeners.filter((l) => l !== listener);
    };
  }

  requestCount(instance?: string): number {
    return instance === undefined ? this.hub.total : (this.hub.counts.get(instance) ?? 0);
  }

  async close(): Promise<void> {
    if (this.hub.closing) return;
    this.hub.closing = true;
    closeListenSocket(this.socket);
    // App.close (native, missing from the typings) also drops idle keep-alive
    // and in-flight connections, so nothing keeps the process alive.
    (this.app as unknown as { close?: () => void }).close?.();
  }
}

export function startSimulator(opts: SimulatorOptions): Promise<Simulator> {
  assertNativeUws();
  if (opts.instances.length === 0) return Promise.reject(new Error('simulator needs at least one instance'));
  // Loaded now so that no request pays the ~150 ms it takes.
  loadEncoder();
  const host = opts.host ?? '127.0.0.1';
  const hub = new Hub(opts.instances);
  const app = App();
  let url = '';
  for (const route of ROUTES) {
    app.post(`/:instance${route.path}`, (res, req) => accept(hub, route, res, req, url));
  }
  app.get(`/:instance${IMAGE_PATH}:file`, (res, req) => {
    if (!hub.counts.has(req.getParameter(0))) return notFound(res, req);
    res.writeStatus('200 OK').writeHeader('content-type', 'image/png').end(PNG);
  });
  app.any('/*', notFound);
  return new Promise((resolve, reject) => {
    app.listen(host, opts.port ?? 0, (socket) => {
      if (socket === false) {
        // uWS says only that it failed; the code lets the start print one line rather than a stack (main.ts).
        reject(Object.assign(new Error(`the simulator cannot listen on ${host}:${opts.port ?? 0} (the port is in use?); set SIMULATOR_PORT`), { code: 'ELISTEN' }));
        return;
      }
      const port = listenSocketPort(socket);
      url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
      resolve(new RunningSimulator(url, port, hub, app, socket));
    });
  });
}
