// Which address a request came from, for per-address limits (console
// sign-in). With http.trusted_proxies empty (the default) it is the socket's
// peer and X-Forwarded-For is ignored: anyone can write that header. When the
// peer is a listed proxy, X-Forwarded-For is read from the right (each proxy
// appends the address it was connected from) and the first address that is
// not a listed proxy is the client: the rightmost-untrusted rule, so a client
// cannot pick its address by sending the header itself. An entry that is not
// an address stops the walk at the last trusted hop. The proxy must hand on
// one X-Forwarded-For header (appending to it, as nginx's
// $proxy_add_x_forwarded_for does): only the first is read.
import { BlockList, isIP } from 'node:net';

/** At most this many hops are read from the right; a longer chain is cut there. */
const MAX_HOPS = 32;

/** The canonical text of an IP address (IPv4-mapped IPv6 as IPv4, IPv6 compressed and lower case), or null when it is none. */
export function canonicalIp(text: string): string | null {
  const kind = isIP(text);
  if (kind === 4) return text;
  if (kind !== 6) return null;
  let host: string;
  try {
    host = new URL(`http://[${text}]/`).hostname.slice(1, -1);
  } catch {
    return null; // e.g. a zone id (fe80::1%eth0)
  }
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(host);
  if (mapped === null) return host;
  const hi = parseInt(mapped[1], 16);
  const lo = parseInt(mapped[2], 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/**
 * The address a per-address limit counts under: an IPv4 address itself, an
 * IPv6 address's /64 (one host or home is usually given a whole /64, so per
 * single address it could rotate without end). Takes canonicalIp's text.
 */
export function limitKey(ip: string): string {
  if (isIP(ip) !== 6) return ip;
  const [head, tail] = ip.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return groups.slice(0, 4).join(':') + '::/64';
}

/** The set of http.trusted_proxies entries (addresses or CIDR blocks); throws naming the first that is neither. */
export function proxySet(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const slash = entry.indexOf('/');
    const ip = canonicalIp(slash < 0 ? entry : entry.slice(0, slash));
    const kind = ip === null ? 0 : isIP(ip);
    const bits = slash < 0 ? null : entry.slice(slash + 1);
    if (ip === null || (bits !== null && (!/^\d{1,3}$/.test(bits) || Number(bits) > (kind === 4 ? 32 : 128)))) {
      throw new Error(`"${entry}" is not an IP address or CIDR block`);
    }
    const type = kind === 4 ? 'ipv4' : 'ipv6';
    if (bits === null) list.addAddress(ip, type);
    else list.addSubnet(ip, Number(bits), type);
  }
  return list;
}

/** The rule as a function of the socket's peer address and the X-Forwarded-For header ('' when absent). */
export function clientAddressRule(trustedProxies: readonly string[]): (peer: string, forwardedFor: string) => string {
  const trusted = trustedProxies.length === 0 ? null : proxySet(trustedProxies);
  const isTrusted = (ip: string) => trusted!.check(ip, isIP(ip) === 4 ? 'ipv4' : 'ipv6');
  return (peer, forwardedFor) => {
    const from = canonicalIp(peer) ?? peer;
    if (trusted === null || !isTrusted(from)) return from;
    let client = from;
    const hops = forwardedFor.split(',');
    for (let i = hops.length - 1; i >= Math.max(0, hops.length - MAX_HOPS); i--) {
      const hop = canonicalIp(hops[i].trim());
      if (hop === null) break;
      client = hop;
      if (!isTrusted(hop)) break;
    }
    return client;
  };
}
