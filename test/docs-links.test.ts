// The repository stands alone: the README and docs/ point at nothing outside
// it (no ../shared spec, no notes a user of the repository does not have),
// and every relative link — file and #anchor — resolves inside it.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import t from 'tap';
import { packageRoot } from '../src/config/paths.js';

function markdownFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? markdownFiles(path) : name.endsWith('.md') ? [path] : [];
  });
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchors(markdown: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  for (const m of withoutFences(markdown).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = m[1].replace(/`/g, '').toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').trim().replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

function withoutFences(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, '');
}

/** Fenced code blocks and inline code hold examples, not links. */
function withoutCode(markdown: string): string {
  return withoutFences(markdown).replace(/`[^`\n]*`/g, '');
}

const files = [join(packageRoot, 'README.md'), ...markdownFiles(join(packageRoot, 'docs'))];

t.test('issue 12 item 16: README and docs/ name nothing outside the repository', async (t) => {
  t.ok(files.some((f) => f.includes(`${sep}docs${sep}api${sep}`)), 'docs/api/ exists');
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    for (const outside of ['../shared', 'gateway-spec.md', 'STACK.md', 'DESIGN.md']) {
      t.notOk(text.includes(outside), `${relative(packageRoot, file)} does not point at ${outside}`);
    }
  }
});

t.test('issue 12 item 16: every relative link in README and docs/ resolves to a file (and heading) in the repository', async (t) => {
  let checked = 0;
  for (const file of files) {
    const text = withoutCode(readFileSync(file, 'utf8'));
    for (const m of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = m[1];
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
      checked++;
      const [path, anchor] = target.split('#') as [string, string | undefined];
      const resolved = path === '' ? file : resolve(dirname(file), decodeURIComponent(path));
      const where = `${relative(packageRoot, file)} → ${target}`;
      if (!resolved.startsWith(packageRoot + sep) || !existsSync(resolved)) {
        t.fail(`${where}: no such file in the repository`);
        continue;
      }
      if (anchor !== undefined && resolved.endsWith('.md')) {
        t.ok(anchors(readFileSync(resolved, 'utf8')).has(anchor), `${where}: heading #${anchor} exists`);
      }
    }
  }
  t.ok(checked >= 10, `${checked} relative links checked`);
});
