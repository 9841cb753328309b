// Anthropic-compatible suppliers: the messages protocol.
import type { ProtocolCode } from '../../catalog/types.js';
import type { WireAdapter } from '../wire.js';

const API_VERSION = '2023-06-01';

export const anthropicCompatible: WireAdapter = {
  protocols: ['native_messages'],
  path: (protocol: ProtocolCode) => (protocol === 'native_messages' ? '/messages' : null),
  headers(credential: string | null) {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'anthropic-version': API_VERSION };
    if (credential !== null) headers['x-api-key'] = credential;
    return headers;
  },
};
