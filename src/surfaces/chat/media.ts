// Input tokens of chat content parts that are not text: their bytes say
// nothing about their cost (a 300 KB inline image at low detail is 85 tokens,
// a short URL to a large image up to 1445). Figures and rules: docs/billing.md.

/** OpenAI's documented image cost: a base per image, plus per 512 px tile at high detail. */
export const IMAGE_BASE_TOKENS = 85;
export const IMAGE_TILE_TOKENS = 170;
/**
 * High detail fits an image in 2048 × 2048, then scales its short side down to
 * 768: at most 2 × 4 tiles. The cost of an image whose size is unknown.
 */
export const IMAGE_HIGH_MAX_TOKENS = IMAGE_BASE_TOKENS + IMAGE_TILE_TOKENS * 8;
/**
 * A file part (e.g. a PDF: its text plus an image of each page) reserves this
 * stated figure, whatever its size; the model's context window caps the whole
 * input estimate (billing/bound.ts).
 */
export const FILE_PART_TOKENS = 131_072;

type Part = Record<string, any>;

/** Tokens of an image at `detail` of `width` × `height` px (OpenAI's tile formula). */
export function imageTokens(detail: unknown, width: number, height: number): number {
  if (detail === 'low') return IMAGE_BASE_TOKENS;
  let w = width;
  let h = height;
  const fit = Math.min(1, 2048 / Math.max(w, h));
  w *= fit;
  h *= fit;
  const short = Math.min(1, 768 / Math.min(w, h));
  w *= short;
  h *= short;
  return IMAGE_BASE_TOKENS + IMAGE_TILE_TOKENS * Math.ceil(w / 512) * Math.ceil(h / 512);
}

/** PNG's width and height from an inline data URL's first bytes, or null (any other format: size unknown). */
function pngSize(url: string): [number, number] | null {
  const comma = url.indexOf(',');
  if (comma < 0 || !url.startsWith('data:image/png;base64,')) return null;
  // 24 bytes: signature (8), IHDR length and type (8), width (4), height (4) = 32 base64 characters.
  const head = Buffer.from(url.slice(comma + 1, comma + 33), 'base64');
  if (head.length < 24 || head.readUInt32BE(0) !== 0x89504e47 || head.toString('latin1', 12, 16) !== 'IHDR') return null;
  const w = head.readUInt32BE(16);
  const h = head.readUInt32BE(20);
  return w > 0 && h > 0 ? [w, h] : null;
}

export interface MediaEstimate {
  /** Tokens of the media parts. */
  tokens: number;
  /** Characters of their payload (URL or inline data) in the body: taken out of the byte estimate. */
  chars: number;
}

/** The media parts of one message's content array, added to `into`. */
export function addMedia(parts: Part[], into: MediaEstimate): void {
  for (const part of parts) {
    if (part.type === 'image_url') {
      const image = part.image_url;
      const url = image !== null && typeof image === 'object' && typeof image.url === 'string' ? image.url : '';
      const size = image?.detail === 'low' ? null : pngSize(url);
      into.tokens += size === null ? (image?.detail === 'low' ? IMAGE_BASE_TOKENS : IMAGE_HIGH_MAX_TOKENS) : imageTokens(image.detail, size[0], size[1]);
      into.chars += url.length;
    } else if (part.type === 'file') {
      const data = part.file?.file_data;
      into.tokens += FILE_PART_TOKENS;
      if (typeof data === 'string') into.chars += data.length;
    }
  }
}
