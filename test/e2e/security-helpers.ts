// Console sign-in over real HTTP from a chosen loopback address (Linux routes
// all of 127.0.0.0/8 to the loopback interface, so 127.0.0.N are distinct
// client addresses for the gateway), and calls with the session it gives.
import { request } from 'node:http';

export interface Answer {
  status: number;
  body: any;
  headers: Record<string, string | string[] | undefined>;
}

/** One call on a connection of its own from `localAddress` (node:http: undici's connect options do not set the local address). */
export function call(
  base: string,
  method: string,
  path: string,
  opts: { body?: unknown; headers?: Record<string, string>; localAddress?: string } = {},
): Promise<Answer> {
  const url = new URL(base + path);
  const payload = opts.body === undefined ? undefined : Buffer.from(JSON.stringify(opts.body));
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method,
        localAddress: opts.localAddress ?? '127.0.0.1',
        agent: false,
        headers: { ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': String(payload.length) }), ...opts.headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          let body: any = text;
          try {
            body = JSON.parse(text);
          } catch {
            /* not JSON */
          }
          resolve({ status: res.statusCode ?? 0, body, headers: res.headers });
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** POST /console/v1/sessions with `credentials` from `localAddress` (and any extra headers, e.g. X-Forwarded-For). */
export function signIn(base: string, credentials: Record<string, string>, localAddress: string, headers: Record<string, string> = {}): Promise<Answer> {
  return call(base, 'POST', '/console/v1/sessions', { body: credentials, localAddress, headers });
}

/** The session cookie of a successful sign-in, as a Cookie header value. */
export function cookieOf(a: Answer): string {
  const set = a.headers['set-cookie'];
  const line = Array.isArray(set) ? set[0] : set;
  const m = /^(tg_session=[^;]+)/.exec(line ?? '');
  if (m === null) throw new Error(`no session cookie in ${a.status} ${JSON.stringify(a.body)}`);
  return m[1];
}
