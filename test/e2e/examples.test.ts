// Every copyable curl example succeeds: the catalog page's per-model examples,
// and the `sh` blocks of the README and docs/api/, run with bash and curl
// against a gateway started on its embedded default with the demo key it
// prints on its first start — the path a new user takes (issue 34 item 1).
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t, { type Test } from 'tap';
import { packageRoot } from '../../src/config/paths.js';
import { startGateway, type Gateway } from '../helpers/gateway.js';

const run = promisify(execFile);

/** The curl commands of a markdown file's `sh` blocks, continuation lines joined. */
export function markdownCurls(text: string): string[] {
  const commands: string[] = [];
  for (const block of text.matchAll(/```(?:sh|bash|shell)\n([\s\S]*?)```/g)) {
    const joined = block[1].replace(/\\\n\s*/g, ' ');
    for (const line of joined.split('\n')) {
      const command = line.replace(/\s+#.*$/, '').trim();
      if (command.startsWith('curl ')) commands.push(command);
    }
  }
  return commands;
}

/** The page's examples: the text of each `<code id="ex-…">`, HTML entities decoded. */
export function pageCurls(html: string): string[] {
  const decode = (s: string) =>
    s.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
  return [...html.matchAll(/<code id="ex-[^"]*">([\s\S]*?)<\/code>/g)].map((m) => decode(m[1]).replace(/\\\n\s*/g, ' '));
}

let gw: Gateway;
let key: string;
t.before(async () => {
  gw = await startGateway({ workers: 2 });
  const banner = /\n\s+(tg_sk_\S+)\n/.exec(gw.output());
  if (!banner) throw new Error('the first start printed no demo key');
  key = banner[1];
});
t.teardown(() => gw?.stop());

/**
 * Runs one example as a user would paste it: localhost:8080 is this gateway,
 * $KEY and $TOLLGATE_KEY the demo key. curl is wrapped to report the status
 * of each request it makes; a pipe into jq is kept (jq must accept the body).
 */
async function runExample(command: string): Promise<{ statuses: number[]; output: string }> {
  const host = new URL(gw.url).host;
  const script =
    `curl() { command curl -sS -w '\\n@@status %{http_code}\\n' "$@"; }\n` +
    command.replaceAll('localhost:8080', host).replace(/\s*\|\s*jq .*$/, '');
  const { stdout } = await run('bash', ['-c', script], {
    env: { ...process.env, KEY: key, TOLLGATE_KEY: key, TOLLGATE_URL: gw.url },
    timeout: 30_000,
    maxBuffer: 16 << 20,
  });
  const statuses = [...stdout.matchAll(/@@status (\d+)/g)].map((m) => Number(m[1]));
  return { statuses, output: stdout };
}

async function expectSuccess(t: Test, where: string, commands: string[]) {
  t.ok(commands.length > 0, `${where} has examples`);
  for (const command of commands) {
    const { statuses, output } = await runExample(command);
    t.ok(statuses.length > 0 && statuses.every((s) => s >= 200 && s < 300), `${where}: ${command.slice(0, 90)}…`, {
      statuses,
      output: output.slice(0, 600),
    });
  }
}

t.test('issue 34 item 1: every example on the catalog page succeeds', async (t) => {
  const html = await (await fetch(gw.url + '/')).text();
  const commands = pageCurls(html);
  const protocols = new Set(commands.map((c) => /\/v1\/[a-z/_]+/.exec(c)?.[0]));
  t.ok(protocols.has('/v1/embeddings') && protocols.has('/v1/images/generations') && protocols.has('/v1/chat/completions'), 'every surface has an example');
  // One example per distinct call shape is enough: the page repeats them per model.
  const unique = [...new Map(commands.map((c) => [c.replace(/"model":"[^"]*"/, ''), c])).values()];
  await expectSuccess(t, 'catalog page', unique);
});

t.test('issue 34 item 1: every curl example in the README and docs/api succeeds', async (t) => {
  const files = ['README.md', ...readdirSync(join(packageRoot, 'docs/api')).map((f) => `docs/api/${f}`)];
  for (const file of files) {
    const commands = markdownCurls(readFileSync(join(packageRoot, file), 'utf8'));
    if (commands.length > 0) await expectSuccess(t, file, commands);
  }
});
