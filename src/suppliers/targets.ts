// Where and how each route is called: the upstream URL, the request headers
// and the credential in them. Computed once per catalog revision per route (a
// revision brings new Route objects, so the WeakMap forgets the old ones), not
// per attempt: new URL(), the headers object and the environment read cost
// about a microsecond each time, on every model call.
import type { CredentialPolicy } from '../catalog/credentials.js';
import type { ProtocolCode, Route } from '../catalog/types.js';
import { credentialOf, REFUSED, wireFor } from './wire.js';

export interface Target {
  protocol: ProtocolCode;
  /** undici Pool key: scheme, host and port. */
  origin: string;
  /** Path and query below the origin. */
  path: string;
  /** Shared by every attempt on this route; undici only reads it. */
  headers: Readonly<Record<string, string>>;
}

export class RouteTargets {
  private readonly cache = new WeakMap<Route, Target | typeof REFUSED>();

  constructor(private readonly credentials: CredentialPolicy) {}

  /** The route's target, or REFUSED when its credential variable is not allowed. */
  of(route: Route, protocol: ProtocolCode): Target | typeof REFUSED {
    const hit = this.cache.get(route);
    // A route object belongs to one protocol; the check only guards a caller that reuses one.
    if (hit !== undefined && (hit === REFUSED || hit.protocol === protocol)) return hit;
    const target = this.resolve(route, protocol);
    this.cache.set(route, target);
    return target;
  }

  private resolve(route: Route, protocol: ProtocolCode): Target | typeof REFUSED {
    const supplier = route.supplier;
    const credential = credentialOf(supplier, this.credentials);
    if (credential === REFUSED) return REFUSED;
    const wire = wireFor(supplier.wireProtocol);
    // The snapshot routes only what the wire can speak (catalog/snapshot.ts), so path() is not null here.
    const url = new URL(supplier.baseUrl + wire.path(protocol)!);
    return { protocol, origin: url.origin, path: url.pathname + url.search, headers: Object.freeze(wire.headers(credential)) };
  }
}
