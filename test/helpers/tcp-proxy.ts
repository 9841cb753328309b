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
  close(): Promise<void>;
}

export async function startProxy(targetHost: string, targetPort: number, port = 0): Promise<CuttableProxy> {
  const sockets = new Set<Socket>();
  let server: Server | null = null;
  let boundPort = port;
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const s = createServer((client) => {
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
