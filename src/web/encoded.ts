// A response body compressed once (gzip and brotli) and the choice among its
// encodings by Accept-Encoding. Done when a page is rendered and, for the
// static assets, by the build (assets.ts); never per request.
import { createHash } from 'node:crypto';
import { brotliCompressSync, brotliDecompressSync, constants, gunzipSync, gzipSync } from 'node:zlib';

export interface Encoded {
  type: string;
  identity: Buffer;
  gzip: Buffer;
  br: Buffer;
  etag: string;
}

export function encodeBody(type: string, body: string | Buffer): Encoded {
  const identity = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  return encodedAs(type, identity, gzipSync(identity, { level: 9 }), brotliCompressSync(identity, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: identity.length } }));
}

/**
 * A body and its compressed forms made elsewhere (at build time: assets.ts),
 * or null when either does not decompress to the body: a damaged file is
 * never served.
 */
export function encodedFrom(type: string, identity: Buffer, gzip: Buffer, br: Buffer): Encoded | null {
  try {
    if (!gunzipSync(gzip).equals(identity) || !brotliDecompressSync(br).equals(identity)) return null;
  } catch {
    return null;
  }
  return encodedAs(type, identity, gzip, br);
}

function encodedAs(type: string, identity: Buffer, gzip: Buffer, br: Buffer): Encoded {
  return { type, identity, gzip, br, etag: '"' + createHash('sha256').update(identity).digest('base64url').slice(0, 27) + '"' };
}

/** Whether `coding` is acceptable in an Accept-Encoding value (absent or q=0 → no). */
function accepts(header: string, coding: string): boolean {
  for (const part of header.split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    if (name.trim() !== coding && name.trim() !== '*') continue;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    if (q === undefined) return true;
    const value = Number(q.slice(2));
    return Number.isFinite(value) && value > 0;
  }
  return false;
}

/** The smallest acceptable encoding: brotli, then gzip, then none. */
export function pickEncoding(body: Encoded, acceptEncoding: string): { coding: 'br' | 'gzip' | null; bytes: Buffer } {
  if (acceptEncoding !== '') {
    if (accepts(acceptEncoding, 'br') && body.br.length < body.identity.length) return { coding: 'br', bytes: body.br };
    if (accepts(acceptEncoding, 'gzip') && body.gzip.length < body.identity.length) return { coding: 'gzip', bytes: body.gzip };
  }
  return { coding: null, bytes: body.identity };
}

/** If-None-Match names this ETag (or *). */
export function notModified(ifNoneMatch: string, etag: string): boolean {
  if (ifNoneMatch === '') return false;
  return ifNoneMatch.split(',').some((t) => {
    const tag = t.trim().replace(/^W\//, '');
    return tag === etag || tag === '*';
  });
}
