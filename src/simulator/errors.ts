// Error bodies in the two wire dialects, and HTTP status lines.
import { STATUS_CODES } from 'node:http';

/** Which error envelope a route answers with. */
export type Dialect = 'openai' | 'anthropic';

const statusLines = new Map<number, string>();

/** "503 Service Unavailable": uWS writes the status line as given. */
export function statusLine(code: number): string {
  let line = statusLines.get(code);
  if (line === undefined) {
    line = `${code} ${code === 529 ? 'Overloaded' : (STATUS_CODES[code] ?? 'Unknown')}`;
    statusLines.set(code, line);
  }
  return line;
}

function openaiType(status: number): string {
  switch (status) {
    case 400:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 429:
      return 'rate_limit_error';
  }
  return status >= 500 ? 'server_error' : 'invalid_request_error';
}

function openaiCode(status: number): string {
  switch (status) {
    case 401:
      return '"invalid_api_key"';
    case 404:
      return '"not_found"';
    case 429:
      return '"rate_limit_exceeded"';
  }
  return 'null';
}

function anthropicType(status: number): string {
  switch (status) {
    case 400:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 429:
      return 'rate_limit_error';
    case 529:
      return 'overloaded_error';
  }
  return status >= 500 ? 'api_error' : 'invalid_request_error';
}

/** `{error:{message,type,param:null,code}}` or `{type:"error",error:{type,message}}`. */
export function errorBody(dialect: Dialect, status: number, message: string): string {
  const msg = JSON.stringify(message);
  if (dialect === 'anthropic') {
    return `{"type":"error","error":{"type":"${anthropicType(status)}","message":${msg}}}`;
  }
  return `{"error":{"message":${msg},"type":"${openaiType(status)}","param":null,"code":${openaiCode(status)}}}`;
}

/** The message of an error asked for with [sim:status=CODE]. */
export function simulatedMessage(status: number): string {
  return `simulated ${statusLine(status)} ([sim:status])`;
}
