// OpenAI image generation: POST /{instance}/v1/images/generations, and the
// GET route its `url` answers point at.
import { deflateSync } from 'node:zlib';
import { nextId, unixSeconds, type Json } from './common.js';
import { parseDirectives } from './directives.js';
import type { Exchange } from './exchange.js';

const SIZE = 16;
const MAX_IMAGES = 10;

/** Path (after /{instance}) under which the GET route serves the image. */
export const IMAGE_PATH = '/sim/images/';

const CRC_TABLE = new Int32Array(256).map((_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c;
});

function crc32(bytes: Buffer): number {
  let c = -1;
  for (let i = 0; i < bytes.length; i++) c = (CRC_TABLE[(c ^ (bytes[i] as number)) & 0xff] as number) ^ (c >>> 8);
  return (c ^ -1) >>> 0;
}

function pngChunk(type: string, data: Buffer): Buffer {
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const out = Buffer.alloc(body.length + 8);
  out.writeUInt32BE(data.length, 0);
  body.copy(out, 4);
  out.writeUInt32BE(crc32(body), body.length + 4);
  return out;
}

/** A 16×16 RGB gradient: small, yet a real PNG any decoder accepts. */
function makePng(): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(SIZE, 0);
  header.writeUInt32BE(SIZE, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // colour type: RGB
  const rows = Buffer.alloc(SIZE * (1 + SIZE * 3));
  for (let y = 0; y < SIZE; y++) {
    const row = y * (1 + SIZE * 3); // each row starts with filter type 0
    for (let x = 0; x < SIZE; x++) {
      rows[row + 1 + x * 3] = x * 16;
      rows[row + 2 + x * 3] = y * 16;
      rows[row + 3 + x * 3] = 160;
    }
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', header),
    pngChunk('IDAT', deflateSync(rows)),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

export const PNG = makePng();
const B64_ENTRY = `{"b64_json":"${PNG.toString('base64')}"}`;

/** `base` is the simulator's URL plus `/{instance}`, for url answers. */
export function handleImages(ex: Exchange, req: Json, base: string): void {
  const prompt = req.prompt;
  if (typeof prompt !== 'string' || prompt.length === 0) return ex.fail(400, "'prompt' is a required property");
  const n = req.n ?? 1;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > MAX_IMAGES) {
    return ex.fail(400, `'n' must be an integer from 1 to ${MAX_IMAGES}`);
  }
  const format = req.response_format;
  if (format !== undefined && format !== null && format !== 'url' && format !== 'b64_json') {
    return ex.fail(400, "'response_format' must be 'url' or 'b64_json'");
  }
  const d = parseDirectives(prompt, ex.instance);
  if (d.status !== 0) return ex.simulateError(d);
  let data = '';
  for (let i = 0; i < n; i++) {
    if (i > 0) data += ',';
    data += format === 'url' ? `{"url":${JSON.stringify(`${base}${IMAGE_PATH}${nextId('img_')}.png`)}}` : B64_ENTRY;
  }
  ex.answer(`{"created":${unixSeconds()},"data":[${data}]}`, d);
}
