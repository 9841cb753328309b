// A TCP proxy a test can cut and restore: stands in for "the database went
// away" without stopping the real server other tests share.
import { connect, createServer, type Server, type Socket } from 'node:net';

export interface CuttableProxy {
  port: number;
  /** Drops every open connection and refuses new ones. */
  cut(): Promise<void>;
  /** The open connections stop carrying bytes either way, and stay open (a network that swallows packets); new ones work. */
  stall(): void;
  restore(): Promise<void>;
  /**
   * Resets (TCP RST: the peer reads ECONNRESET) every open connection now, and
   * every new one as it arrives for the next `ms`; then connections work again.
   * What a PostgreSQL failover or a flaky network does to a client's sockets.
   */
  reset(ms: number): void;
  /** Connections reset so far (open ones and new ones refused by reset()). */
  readonly resets: number;
  close(): Promise<void>;
}

export async function startProxy(targetHost: string, targetPort: number, port = 0): Promise<CuttableProxy> {
  const sockets = new Set<Socket>();
  let server: Server | null = null;
  let boundPort = port;
  let resettingUntil = 0;
  let resets = 0;
  const rst = (s: Socket): void => {
    resets++;
    s.resetAndDestroy();
  };
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const s = createServer((client) => {
        if (Date.now() < resettingUntil) {
          client.on('error', () => {});
          return rst(client);
        }
        const upstream = connect(targetPort, targetHost);
        sockets.add(client).add(upstream);
        const drop = () => {
          client.destroy();
          upstream.destroy();
          sockets.delete(client);
          sockets.delete(upstream);
        };
        client.on('error', drop).on('close', drop);
        upstream.on('error', drop).on('close', drop);
        client.pipe(upstream).pipe(client);
      });
      s.once('error', reject);
      s.listen(boundPort, '127.0.0.1', () => {
        boundPort = (s.address() as { port: number }).port;
        server = s;
        resolve();
      });
    });
  const stop = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      sockets.clear();
      if (server === null) return resolve();
      server.close(() => resolve());
      server = null;
    });
  await listen();
  return {
    get port() {
      return boundPort;
    },
    cut: stop,
    stall: () => {
      for (const s of sockets) s.pause();
    },
    restore: listen,
    reset(ms: number) {
      resettingUntil = Date.now() + ms;
      // Both sides: the client reads ECONNRESET, the server sees its backend's connection reset too.
      for (const s of [...sockets]) if (!s.destroyed) rst(s);
      sockets.clear();
    },
    get resets() {
      return resets;
    },
    close: stop,
  };
}

/** A proxy in front of the PostgreSQL at `databaseUrl`, and the same URL through it: the store a test can take away. */
export async function proxiedDatabase(databaseUrl: string): Promise<{ proxy: CuttableProxy; url: string }> {
  const target = new URL(databaseUrl);
  const proxy = await startProxy(target.hostname, Number(target.port || 5432));
  const viaProxy = new URL(databaseUrl);
  viaProxy.port = String(proxy.port);
  return { proxy, url: viaProxy.toString() };
}
