// The Sentinel form of redis_url, parsed without ioredis (the config check
// runs in every process, and ioredis is loaded only where the ledger is on
// Redis):
//   redis-sentinel://[[user]:password@]host:port[,host:port…]/<master name>[?sentinel_password=…]
// the sentinels' addresses, the master's name, the password of the master
// (and its replicas), and the sentinels' own password when it differs (by
// default the same one; none when the URL has none).

export interface SentinelUrl {
  sentinels: Array<{ host: string; port: number }>;
  name: string;
  username?: string;
  password?: string;
  sentinelPassword?: string;
}

export const SENTINEL_URL_FORM = 'redis-sentinel://[:password@]host:port[,host:port…]/<master name>';

/** Throws an Error whose message says what is wrong (the config check prefixes the setting's name). */
export function parseSentinelUrl(url: string): SentinelUrl {
  const m = /^redis-sentinel:\/\/(?:([^:@/]*)(?::([^@/]*))?@)?([^/?]+)\/([^/?]+)(?:\?(.*))?$/.exec(url);
  if (m === null) throw new Error(`a Sentinel URL is ${SENTINEL_URL_FORM}`);
  const [, user, password, hosts, master, query] = m;
  const sentinels = hosts.split(',').map((hp) => {
    const at = hp.lastIndexOf(':');
    const host = at >= 0 ? hp.slice(0, at) : hp;
    const port = at >= 0 ? Number(hp.slice(at + 1)) : 26379;
    if (host === '' || !Number.isInteger(port) || port <= 0 || port > 65535) throw new Error(`bad sentinel address '${hp}' (host:port)`);
    return { host, port };
  });
  const params = new URLSearchParams(query ?? '');
  const unknown = [...params.keys()].filter((k) => k !== 'sentinel_password');
  if (unknown.length > 0) throw new Error(`unknown parameter '${unknown[0]}' (only sentinel_password)`);
  const pass = password === undefined || password === '' ? undefined : decodeURIComponent(password);
  return {
    sentinels,
    name: decodeURIComponent(master),
    username: user === undefined || user === '' ? undefined : decodeURIComponent(user),
    password: pass,
    sentinelPassword: params.get('sentinel_password') ?? pass,
  };
}
