// The Cluster form of redis_url, parsed without ioredis (the config check
// runs in every process, and ioredis is loaded only where the ledger is on
// Redis):
//   redis-cluster://[[user]:password@]host:port[,host:port…]
// seed nodes (any of the cluster's nodes: the client asks them for the slot
// map and connects to every primary from there) and the password the nodes
// share (Redis Cluster has one for all of them).

export interface ClusterUrl {
  nodes: Array<{ host: string; port: number }>;
  username?: string;
  password?: string;
}

export const CLUSTER_URL_FORM = 'redis-cluster://[:password@]host:port[,host:port…]';

/** Throws an Error whose message says what is wrong (the config check prefixes the setting's name). */
export function parseClusterUrl(url: string): ClusterUrl {
  const m = /^redis-cluster:\/\/(?:([^:@/]*)(?::([^@/]*))?@)?([^/?]+)\/?$/.exec(url);
  if (m === null) throw new Error(`a Cluster URL is ${CLUSTER_URL_FORM}`);
  const [, user, password, hosts] = m;
  const nodes = hosts.split(',').map((hp) => {
    const at = hp.lastIndexOf(':');
    const host = at >= 0 ? hp.slice(0, at) : hp;
    const port = at >= 0 ? Number(hp.slice(at + 1)) : 6379;
    if (host === '' || !Number.isInteger(port) || port <= 0 || port > 65535) throw new Error(`bad cluster node address '${hp}' (host:port)`);
    return { host, port };
  });
  return {
    nodes,
    username: user === undefined || user === '' ? undefined : decodeURIComponent(user),
    password: password === undefined || password === '' ? undefined : decodeURIComponent(password),
  };
}
