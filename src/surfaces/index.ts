// The registry: every surface of the gateway, one entry each. Everything that
// must know the surfaces is derived from this list — the server routes and
// the unknown-path-under-prefix routes (pipeline/routes.ts), the pool's
// preparers, reply decoders and local-operation decoders (workers/*.ts, by
// entry name), offload, and the metrics label (the entry's name) — so a
// surface is one folder plus one line here, and nothing else can be
// forgotten (test/surfaces/registry.test.ts walks the list).
//
// The pool imports this module: it and everything it imports are pure (no
// server, no pipeline, no I/O). GET /v1/models and GET /v1/key answer from
// the worker's own state (catalog, key index) and never reach the pool, so
// they are routed beside this list (pipeline/routes.ts), from their folders.
import { chatCodec, chatExample } from './chat/codec.js';
import { countTokensExample, countTokensOperation } from './count-tokens/operation.js';
import { embeddingsCodec, embeddingsExample } from './embeddings/codec.js';
import { imagesCodec, imagesExample, UNSERVED_IMAGE_PATHS } from './images/codec.js';
import type { LocalOperation } from './local-operation.js';
import { messagesCodec, messagesExample } from './messages/codec.js';
import { responsesCodec, responsesExample } from './responses/codec.js';
import type { ModelSurface } from './surface.js';

/** A surface that calls a model (pipeline/run.ts). */
export interface ModelCallEntry {
  /** The surface's name: its metrics label and its key in the pool. */
  readonly name: string;
  readonly role: 'model_call';
  readonly surface: ModelSurface;
  /** A request body the demo catalog answers, around `text` (README; test/surfaces/registry.test.ts sends it large). */
  readonly example: (text: string) => object;
  /** Paths under the surface's prefix that the spec names but the gateway does not serve: 404 in its envelope. */
  readonly unserved?: readonly string[];
}

/** An operation the gateway answers itself (pipeline/local.ts). */
export interface LocalEntry {
  readonly name: string;
  readonly role: 'local';
  readonly operation: LocalOperation<any>;
  readonly example: (text: string) => object;
}

export type SurfaceEntry = ModelCallEntry | LocalEntry;

export const SURFACES: readonly SurfaceEntry[] = [
  { name: 'chat', role: 'model_call', surface: chatCodec, example: chatExample },
  { name: 'messages', role: 'model_call', surface: messagesCodec, example: messagesExample },
  { name: 'count_tokens', role: 'local', operation: countTokensOperation, example: countTokensExample },
  { name: 'responses', role: 'model_call', surface: responsesCodec, example: responsesExample },
  { name: 'embeddings', role: 'model_call', surface: embeddingsCodec, example: embeddingsExample },
  { name: 'images', role: 'model_call', surface: imagesCodec, example: imagesExample, unserved: UNSERVED_IMAGE_PATHS },
];

/** The path an entry serves. */
export function pathOf(entry: SurfaceEntry): string {
  return entry.role === 'model_call' ? entry.surface.path : entry.operation.path;
}

function byName(): Map<string, SurfaceEntry> {
  const names = new Map<string, SurfaceEntry>();
  const paths = new Set<string>();
  for (const entry of SURFACES) {
    // Two entries under one name would share a pool key and a metrics label; under one path, one would never be reached.
    if (names.has(entry.name) || paths.has(pathOf(entry))) throw new Error(`surfaces: ${entry.name} (${pathOf(entry)}) is registered twice`);
    names.set(entry.name, entry);
    paths.add(pathOf(entry));
  }
  return names;
}

const BY_NAME = byName();

/** The model-call surface registered as `name` (what a pool task names). */
export function modelCallNamed(name: string): ModelSurface {
  const entry = BY_NAME.get(name);
  if (entry?.role !== 'model_call') throw new Error(`surfaces: no model-call surface named ${name}`);
  return entry.surface;
}

/** The local operation registered as `name`. */
export function localOperationNamed(name: string): LocalOperation<any> {
  const entry = BY_NAME.get(name);
  if (entry?.role !== 'local') throw new Error(`surfaces: no local operation named ${name}`);
  return entry.operation;
}
