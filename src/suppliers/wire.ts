// What differs between upstream wire protocols, kept small: where each
// protocol lives under the supplier's base URL, and how the credential is
// presented. Everything else (pools, failover, streaming) is shared.
import type { CredentialPolicy } from '../catalog/credentials.js';
import type { ProtocolCode, Supplier, WireProtocol } from '../catalog/types.js';
import { anthropicCompatible } from './anthropic-compatible/wire.js';
import { openaiCompatible } from './openai-compatible/wire.js';

export interface WireAdapter {
  /** The protocols this wire can speak: path() is non-null for exactly these. */
  readonly protocols: readonly ProtocolCode[];
  /** Path below the base URL (which ends in /v1) for a protocol this wire speaks. */
  path(protocol: ProtocolCode): string | null;
  /** Request headers, with the credential (null: the supplier needs none). */
  headers(credential: string | null): Record<string, string>;
}

const ADAPTERS: Record<WireProtocol, WireAdapter> = {
  'openai-compatible': openaiCompatible,
  'anthropic-compatible': anthropicCompatible,
};

/** The wires the gateway speaks (the catalog schema's wire_protocol enum must list exactly these). */
export const WIRES = Object.keys(ADAPTERS) as WireProtocol[];

export function wireFor(protocol: WireProtocol): WireAdapter {
  return ADAPTERS[protocol];
}

/**
 * Whether a wire can speak a protocol. Takes plain strings: it judges catalog
 * files and stored rows, where an unknown wire or protocol is simply "no".
 */
export function wireSpeaks(wire: string, protocol: string): boolean {
  const adapter = Object.hasOwn(ADAPTERS, wire) ? ADAPTERS[wire as WireProtocol] : undefined;
  return adapter !== undefined && adapter.protocols.includes(protocol as ProtocolCode);
}

/** Refused: the supplier names a variable the credential policy does not allow. */
export const REFUSED = Symbol('refused credential');

/**
 * The supplier's credential, read from the environment (never from the store
 * or a file) — only from a variable the policy allows, whatever the catalog says.
 */
export function credentialOf(supplier: Supplier, policy: CredentialPolicy): string | null | typeof REFUSED {
  const name = supplier.credentialEnv;
  if (name === null || name === '') return null;
  if (!policy.allows(name)) return REFUSED;
  return process.env[name] || null;
}
