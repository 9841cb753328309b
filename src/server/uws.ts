// The only module that imports uWebSockets.js: the package is an unofficial
// build (the official one is not on the npm registry), so swapping it is a
// one-line change here. See STACK.md.
import { createRequire } from 'node:module';
import type * as UWS from '@trufflesuite/uws-js-unofficial';

const require = createRequire(import.meta.url);
const uws = require('@trufflesuite/uws-js-unofficial') as typeof UWS;

export type HttpResponse = UWS.HttpResponse;
export type HttpRequest = UWS.HttpRequest;
export type TemplatedApp = UWS.TemplatedApp;
export type ListenSocket = UWS.us_listen_socket;

/**
 * The package silently falls back to a pure-JS server (with a console.warn)
 * when its native binary does not load; that fallback is an order of
 * magnitude slower, so we refuse to run on it. Only the native addon exports
 * `getParts` and `SSLApp`.
 */
export function assertNativeUws(): void {
  const native = uws as unknown as Record<string, unknown>;
  if (typeof native.getParts !== 'function' || typeof native.SSLApp !== 'function') {
    throw new Error(
      'uWebSockets.js native binary did not load (pure-JS fallback in use); ' +
        `node ${process.version} ${process.platform}-${process.arch} abi ${process.versions.modules} is not supported by the installed build`,
    );
  }
}

export const App = uws.App;
export const closeListenSocket = uws.us_listen_socket_close;
export const listenSocketPort = uws.us_socket_local_port;
