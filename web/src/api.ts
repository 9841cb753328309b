// The console REST API as the pages call it: same origin, the session cookie
// sent by the browser, the CSRF token (from the session answer, kept in
// memory only) on every change, errors turned into ApiError with the REST
// envelope's code and message.
namespace api {
  export let csrf = '';

  export class ApiError extends Error {
    constructor(
      readonly status: number,
      readonly code: string,
      message: string,
      /** "field: issue" for each field the API refused. */
      readonly details: string[] = [],
    ) {
      super(message);
    }
  }

  export async function call<T = any>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = {};
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (method !== 'GET') headers['x-csrf-token'] = csrf;
    const res = await fetch('/console/v1' + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'same-origin', cache: 'no-store' });
    const text = await res.text();
    const json = text === '' ? null : JSON.parse(text);
    if (!res.ok) {
      const details = Array.isArray(json?.error?.field_details) ? json.error.field_details.slice(0, 10).map((d: any) => `${d.field}: ${d.issue}`) : [];
      throw new ApiError(res.status, json?.error?.code ?? 'error', json?.error?.message ?? `HTTP ${res.status}`, details);
    }
    return json as T;
  }

  export function qs(params: Record<string, string | number | null | undefined>): string {
    const parts = Object.entries(params)
      .filter(([, v]) => v !== null && v !== undefined && v !== '')
      .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`);
    return parts.length > 0 ? '?' + parts.join('&') : '';
  }
}
