// What a messages conversation holds, read for counting: the text of each
// turn (text, tool calls and their results, thinking replayed), and the
// blocks whose cost is not their text (images, documents), which get a
// stated token figure instead. Pure; shared by the input bound of
// /v1/messages, its local count at settlement, and count_tokens.

/**
 * An image block, whatever its size: the most an image costs. Models of this
 * protocol scale an image to fit about 1.15 megapixels and charge about one
 * token per 750 pixels, so no image costs more than ~1600 tokens.
 */
export const IMAGE_TOKENS = 1600;
/**
 * A document block that is not plain text (a PDF as base64, a URL, a file
 * id): its text and page images are not known here, so it counts this many
 * tokens per 3 bytes of its base64 payload (at least DOCUMENT_MIN_TOKENS):
 * a text-heavy PDF page is ~2 KB and ~1500–3000 tokens.
 */
export const DOCUMENT_BYTES_PER_TOKEN = 3;
export const DOCUMENT_MIN_TOKENS = 1600;

type Block = Record<string, any>;

export interface MediaCount {
  /** Stated tokens of image and document blocks. */
  tokens: number;
  /** Characters of their payloads in the body (taken out of a byte-based estimate). */
  chars: number;
}

function documentText(block: Block, media: MediaCount): string {
  const source = block.source;
  if (source !== null && typeof source === 'object' && source.type === 'text' && typeof source.data === 'string') return source.data;
  const data = source !== null && typeof source === 'object' && typeof source.data === 'string' ? source.data : '';
  media.tokens += Math.max(DOCUMENT_MIN_TOKENS, Math.ceil((data.length * 3) / 4 / DOCUMENT_BYTES_PER_TOKEN));
  media.chars += data.length;
  return '';
}

function imagePayload(block: Block): number {
  const source = block.source;
  if (source === null || typeof source !== 'object') return 0;
  if (typeof source.data === 'string') return source.data.length;
  return typeof source.url === 'string' ? source.url.length : 0;
}

/**
 * The text of each block of a content value (a string is one piece), pushed
 * to `into`; images and documents are added to `media` instead.
 */
export function contentPieces(content: unknown, media: MediaCount, into: string[]): void {
  if (typeof content === 'string') {
    into.push(content);
    return;
  }
  if (!Array.isArray(content)) return;
  for (const block of content as Block[]) {
    if (block === null || typeof block !== 'object') continue;
    switch (block.type) {
      case 'text':
        if (typeof block.text === 'string') into.push(block.text);
        break;
      case 'tool_use':
      case 'server_tool_use':
        into.push(String(block.name ?? '') + JSON.stringify(block.input ?? {}));
        break;
      case 'tool_result':
        contentPieces(block.content, media, into);
        break;
      case 'thinking':
        if (typeof block.thinking === 'string') into.push(block.thinking);
        break;
      case 'redacted_thinking':
        break;
      case 'image':
        media.tokens += IMAGE_TOKENS;
        media.chars += imagePayload(block);
        break;
      case 'document':
        into.push(documentText(block, media));
        break;
      default:
        // A block this gateway does not know: its JSON is an upper estimate of its text.
        into.push(JSON.stringify(block));
    }
  }
}

/** Text of a content value, its blocks joined by newlines. */
export function contentText(content: unknown, media: MediaCount): string {
  const pieces: string[] = [];
  contentPieces(content, media, pieces);
  return pieces.join('\n');
}

/** The system prompt's text ('' when absent). */
export function systemText(system: unknown): string {
  return system === undefined ? '' : contentText(system, { tokens: 0, chars: 0 });
}

/** A tool as the model reads it: everything but its cache marker. */
export function toolText(tool: Block): string {
  const { cache_control: _cache, ...rest } = tool;
  return JSON.stringify(rest);
}
