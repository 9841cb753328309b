// Shared by the auth and console tests: HTTP calls that show which worker
// answered, an organization made through the store code, the CLI as a child.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { join } from 'node:path';
import { packageRoot } from '../../src/config/paths.js';
import { createOrganization } from '../../src/organizations/store.js';
import { parseMoney } from '../../src/money/money.js';
import { createPool } from '../../src/store/pool.js';
import type { Gateway } from '../helpers/gateway.js';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';
export const ADMIN = { authorization: `Bearer ${ADMIN_TOKEN}` };

export interface Reply {
  status: number;
  headers: Record<string, string>;
  text: string;
  json: any;
}

/** One request on a fresh connection (SO_REUSEPORT then spreads them over the workers). */
export function call(url: string, method: string, path: string, headers: Record<string, string> = {}, body?: unknown): Promise<Reply> {
  const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  const h: Record<string, string> = { ...headers };
  if (payload !== undefined) {
    h['content-type'] ??= 'application/json';
    h['content-length'] = String(Buffer.byteLength(payload));
  }
  return new Promise((resolve, reject) => {
    const req = http.request(url + path, { method, headers: h, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        let json: any = null;
        try {
          json = JSON.parse(text);
        } catch {
          /* not JSON */
        }
        const headers: Record<string, string> = {};
        for (let i = 0; i < res.rawHeaders.length; i += 2) headers[res.rawHeaders[i].toLowerCase()] = res.rawHeaders[i + 1];
        resolve({ status: res.statusCode!, headers, text, json });
      });
    });
    req.on('error', reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

export const bearer = (key: string): Record<string, string> => ({ authorization: `Bearer ${key}` });

/** An organization, made with the same store code the console and the CLI use. */
export async function createOrg(storeUrl: string, name = 'Test org', balance = '10.00'): Promise<string> {
  const pool = createPool(storeUrl, 1);
  try {
    return (await createOrganization(pool, randomUUID(), name, parseMoney(balance)!)).id;
  } finally {
    await pool.end();
  }
}

export async function createKey(gw: Gateway, orgId: string, body: Record<string, unknown> = { name: 'test key' }): Promise<{ id: string; secret: string; json: any }> {
  const r = await call(gw.url, 'POST', `/console/v1/organizations/${orgId}/keys`, ADMIN, body);
  if (r.status !== 201) throw new Error(`key creation answered ${r.status}: ${r.text}`);
  return { id: r.json.id, secret: r.json.secret, json: r.json };
}

/** The pid of the worker that answered `requestId` (from its request log line). */
export async function workerOf(gw: Gateway, requestId: string): Promise<number> {
  const line = await gw.waitForLog((l) => l.msg === 'request' && l.rid === requestId, 5000);
  return line.pid as number;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** A random well-formed key nobody issued. */
export function randomKey(): string {
  const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  let s = 'tg_sk_';
  for (let i = 0; i < 43; i++) s += alphabet[Math.floor(Math.random() * 62)];
  return s;
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the built `tollgate` command (dist/src/console/cli.js) as an operator would. */
export function tollgate(args: string[], env: Record<string, string>): Promise<CliResult> {
  const fullEnv: Record<string, string> = { ...(process.env as Record<string, string>), ...env };
  // The command sees only the services the test names (CI exports both for the tests themselves).
  if (!env.DATABASE_URL) delete fullEnv.DATABASE_URL;
  if (!env.REDIS_URL) delete fullEnv.REDIS_URL;
  return new Promise((resolve) => {
    execFile(process.execPath, [join(packageRoot, 'dist/src/console/cli.js'), ...args], { env: fullEnv, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof (err as any).code === 'number' ? (err as any).code : 1;
      resolve({ code, stdout, stderr });
    });
  });
}
