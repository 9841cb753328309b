// uWS writes the status line verbatim; these are built once.
const TEXT: Record<number, string> = {
  200: 'OK', 201: 'Created', 204: 'No Content', 304: 'Not Modified',
  400: 'Bad Request', 401: 'Unauthorized', 402: 'Payment Required', 403: 'Forbidden', 404: 'Not Found',
  405: 'Method Not Allowed', 408: 'Request Timeout', 409: 'Conflict', 413: 'Payload Too Large', 415: 'Unsupported Media Type',
  422: 'Unprocessable Entity', 429: 'Too Many Requests', 499: 'Client Closed Request',
  500: 'Internal Server Error', 501: 'Not Implemented', 502: 'Bad Gateway', 503: 'Service Unavailable',
  504: 'Gateway Timeout', 529: 'Overloaded',
};

const LINES = new Map<number, string>(Object.entries(TEXT).map(([code, text]) => [Number(code), `${code} ${text}`]));

export function statusLine(status: number): string {
  return LINES.get(status) ?? String(status);
}
