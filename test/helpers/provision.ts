// Organizations and keys for end-to-end tests, made through the real console
// API (ADMIN_TOKEN) of a running gateway.
export const ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';

export interface Provisioned {
  orgId: string;
  key: string;
  keyId: string;
}

export async function console_(base: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${base}/console/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`console ${method} ${path} → ${res.status} ${text}`);
  return text === '' ? null : JSON.parse(text);
}

/** A new organization with `balance` (decimal string) and one key. */
export async function provision(base: string, opts: { balance?: string; scope?: unknown; name?: string } = {}): Promise<Provisioned> {
  const org = await console_(base, 'POST', '/organizations', { name: opts.name ?? 'test org', balance: opts.balance ?? '100.00' });
  const key = await console_(base, 'POST', `/organizations/${org.id}/keys`, { name: 'test key', ...(opts.scope ? { scope: opts.scope } : {}) });
  return { orgId: org.id, key: key.secret, keyId: key.id };
}

/** The first page of an organization's usage rows (the console's default page size). */
export async function usageRows(base: string, orgId: string): Promise<any[]> {
  const list = await console_(base, 'GET', `/organizations/${orgId}/usage`);
  return list.data;
}

/** Every usage row of an organization, page after page. */
export async function allUsageRows(base: string, orgId: string): Promise<any[]> {
  const rows: any[] = [];
  let cursor: string | null = null;
  do {
    const list: any = await console_(base, 'GET', `/organizations/${orgId}/usage?limit=100${cursor === null ? '' : `&cursor=${cursor}`}`);
    rows.push(...list.data);
    cursor = list.has_more ? list.next_cursor : null;
  } while (cursor !== null);
  return rows;
}

/** The usage rows once at least `n` are written (settlements are flushed asynchronously), after 5 s whatever there is. */
export async function usageRowsAtLeast(base: string, orgId: string, n: number): Promise<any[]> {
  let rows: any[] = [];
  for (let i = 0; i < 50 && rows.length < n; i++) {
    rows = await usageRows(base, orgId);
    if (rows.length < n) await new Promise((r) => setTimeout(r, 100));
  }
  return rows;
}

export async function organization(base: string, orgId: string): Promise<any> {
  return console_(base, 'GET', `/organizations/${orgId}`);
}
