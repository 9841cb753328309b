// The secrets invariant: no key, prompt or answer text in any log line or any
// table. Prompts carry distinctive markers; the scan looks for the markers,
// for every key secret handed out, and for the simulator's answer words.
import pg from 'pg';

/** A marker no code or fixture contains: to be written into prompts and searched for afterwards. */
export function marker(tag: string): string {
  return `zqx${tag}${Math.random().toString(36).slice(2, 10)}qxz`;
}

/** Every row of every table in the database's public schema, as text (one line per row, prefixed by its table). */
export async function dumpTables(databaseUrl: string): Promise<string> {
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    const tables = (await c.query(`SELECT tablename FROM pg_tables WHERE schemaname = 'public'`)).rows.map((r) => String(r.tablename));
    const out: string[] = [];
    for (const t of tables) {
      const { rows } = await c.query(`SELECT t::text AS row FROM "${t}" t`);
      for (const r of rows) out.push(`${t}: ${r.row}`);
    }
    return out.join('\n');
  } finally {
    await c.end();
  }
}

/** What markers and keys look like: found by shape in one pass each, then looked up. */
const SHAPES = [/zqx[a-z]+[0-9a-z]{8}qxz/g, /tg_sk_[0-9A-Za-z]{32,128}/g];
const WHOLE_SHAPES = SHAPES.map((re) => new RegExp(`^${re.source}$`));

/**
 * Which of `needles` appear in `haystack`, each with a little context (the
 * needle itself masked). Needles of a known shape are found in one pass per
 * shape (a soak's hundred megabytes of log and tables times thousands of
 * needles would otherwise take minutes); others by a search each.
 */
export function findSecrets(haystack: string, needles: string[]): string[] {
  const found: string[] = [];
  const context = (needle: string, at: number): string => `${needle.slice(0, 6)}… at: ${haystack.slice(Math.max(0, at - 80), at)}[…]`;
  const shaped = new Set(needles.filter((n) => WHOLE_SHAPES.some((re) => re.test(n))));
  for (const re of SHAPES) for (const m of haystack.matchAll(re)) if (shaped.has(m[0])) found.push(context(m[0], m.index));
  for (const needle of needles) {
    if (shaped.has(needle)) continue;
    if (needle.length < 8) throw new Error('a needle that short would match by chance');
    const at = haystack.indexOf(needle);
    if (at >= 0) found.push(context(needle, at));
  }
  return found;
}
