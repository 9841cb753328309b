// The web assets' compressed forms: made once by the build's step, read by a
// worker when they are exactly its assets', and made by the worker itself
// when they are missing or damaged (src/web/assets.ts).
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib';
import t from 'tap';
import { packageRoot } from '../../src/config/paths.js';
import { ENCODED_DIR, loadAssets, writeEncodedAssets } from '../../src/web/assets.js';

/** A package root of its own: the three sources copied, no compressed forms yet. */
function freshRoot(): string {
  const root = mkdtempSync(join(tmpdir(), 'tollgate-assets-'));
  for (const path of ['dist/web/app.js', 'web/static/app.css', 'web/static/icon.svg']) cpSync(join(packageRoot, path), join(root, path));
  return root;
}

t.test('every asset served decompresses to its bytes, built or not', async (t) => {
  const root = freshRoot();
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const unbuilt = loadAssets(root);
  t.equal(unbuilt.byFile.size, 3);
  writeEncodedAssets(root);
  const built = loadAssets(root);
  for (const [file, e] of built.byFile) {
    t.same(gunzipSync(e.gzip), e.identity, `${file}: gzip`);
    t.same(brotliDecompressSync(e.br), e.identity, `${file}: brotli`);
    t.equal(e.etag, unbuilt.byFile.get(file)!.etag, `${file}: the same ETag either way`);
  }
  t.same([...built.byFile.keys()], [...unbuilt.byFile.keys()], 'the same names either way');
});

t.test("a worker reads the build's files, and compresses itself when they are damaged", async (t) => {
  const root = freshRoot();
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const written = writeEncodedAssets(root);
  t.equal(written.length, 6, 'a .gz and a .br per asset');
  const dir = join(root, ENCODED_DIR);
  const js = written.find((f) => f.endsWith('.js.gz'))!.slice(0, -'.gz'.length);
  const identity = readFileSync(join(root, 'dist/web/app.js'));
  // A valid gzip of the same bytes, other than the one the worker would make (level 1, not 9): served only if the file is read.
  const fast = gzipSync(identity, { level: 1 });
  writeFileSync(join(dir, `${js}.gz`), fast);
  t.same(loadAssets(root).byFile.get(js)!.gzip, fast, "the build's file is what is served");

  writeFileSync(join(dir, `${js}.br`), Buffer.from('not brotli'));
  const repaired = loadAssets(root).byFile.get(js)!;
  t.same(brotliDecompressSync(repaired.br), identity, 'a damaged file is not served: the worker compressed the asset itself');
  t.notOk(repaired.gzip.equals(fast), 'both forms made afresh');

  // A gzip that decompresses to other bytes (an earlier build's, renamed) is not served either.
  writeFileSync(join(dir, `${js}.gz`), gzipSync(Buffer.from('console.log("an older app")')));
  t.same(gunzipSync(loadAssets(root).byFile.get(js)!.gzip), identity);
});

t.test("a rebuild removes the files of earlier builds' assets", async (t) => {
  const root = freshRoot();
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const first = writeEncodedAssets(root);
  writeFileSync(join(root, 'web/static/app.css'), readFileSync(join(root, 'web/static/app.css'), 'utf8') + '\n/* changed */\n');
  const second = writeEncodedAssets(root);
  const gone = first.filter((f) => !second.includes(f));
  t.equal(gone.length, 2, "the old stylesheet's two files");
  for (const f of gone) t.notOk(existsSync(join(root, ENCODED_DIR, f)), `${f} removed`);
  t.same(readdirSync(join(root, ENCODED_DIR)).sort(), [...second].sort(), 'nothing else left behind');
});
