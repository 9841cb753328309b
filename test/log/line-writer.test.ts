// The log destination (src/log/line-writer.ts): the lines of LINGER_MS leave
// together in one write (or at the end of the turn past 64 KB), flush() writes at once, and
// a destination that does not take them now (a full pipe) gets them later
// without the event loop ever stopping to wait.
import { spawn } from 'node:child_process';
import { mkdtempSync, openSync, closeSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { LINGER_MS, LineWriter } from '../../src/log/line-writer.js';

const nextTurn = (): Promise<void> => new Promise((r) => setImmediate(() => setImmediate(r)));

t.test('lines wait LINGER_MS for the ones after them, then leave in one write, in order; past 64 KB at the end of the turn; flush writes at once', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'line-writer-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'out.log');
  const fd = openSync(path, 'w');
  t.teardown(() => closeSync(fd));
  const w = new LineWriter(fd);
  w.write('{"n":1}\n');
  await nextTurn();
  w.write('{"n":2}\n');
  t.equal(readFileSync(path, 'utf8'), '', 'nothing written yet: the first line waits for the ones after it');
  await new Promise((r) => setTimeout(r, LINGER_MS + 5));
  t.equal(readFileSync(path, 'utf8'), '{"n":1}\n{"n":2}\n', `both lines, in order, within ${LINGER_MS} ms`);
  // A burst: past 64 KB waiting, it leaves at the end of this turn without waiting for the timer.
  const big = `{"pad":"${'x'.repeat(70_000)}"}\n`;
  w.write(big);
  await nextTurn();
  t.equal(readFileSync(path, 'utf8').length, 16 + big.length, 'a burst over 64 KB is written at the end of its turn');
  w.write('{"n":3}\n');
  let flushed = false;
  w.flush(() => (flushed = true));
  t.ok(flushed, 'flush calls back at once when the destination takes everything');
  t.ok(readFileSync(path, 'utf8').endsWith('{"n":3}\n'), 'flush wrote the queued line');
  await new Promise((r) => setTimeout(r, LINGER_MS + 5));
  t.equal(readFileSync(path, 'utf8').length, 16 + big.length + 8, 'and its timer writes nothing twice');
});

t.test('a full pipe: lines wait without stopping the event loop, and all arrive in order', async (t) => {
  // A reader that starts reading only after 400 ms: the pipe (64 KiB) fills long before.
  const reader = spawn(process.execPath, ['-e', 'setTimeout(() => { let n = 0, last = ""; process.stdin.on("data", (d) => { n += d.length; last = d.toString().trim().split("\\n").pop(); }); process.stdin.on("end", () => console.log(JSON.stringify({ n, last }))); }, 400)'], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const fd = (reader.stdin as unknown as { _handle: { fd: number } })._handle.fd;
  t.ok(fd > 2, 'the pipe has a descriptor');
  const w = new LineWriter(fd);
  const line = (i: number): string => `{"level":30,"i":${i},"pad":"${'x'.repeat(200)}"}\n`;
  let bytes = 0;
  const N = 5000; // ~1.1 MB: far more than the pipe holds
  for (let i = 0; i < N; i++) {
    w.write(line(i));
    bytes += line(i).length;
  }
  // The event loop keeps turning while the destination is full: a 20 ms timer fires close to on time.
  const started = Date.now();
  await nextTurn();
  const lateBy = await new Promise<number>((resolve) => {
    const due = Date.now() + 20;
    setTimeout(() => resolve(Date.now() - due), 20);
  });
  t.ok(Date.now() - started < 300, `the turn that met the full pipe did not wait for it (${Date.now() - started} ms)`);
  t.ok(lateBy < 100, `a timer ran on time meanwhile (${lateBy} ms late)`);
  const done = new Promise<void>((resolve) => w.flush(() => resolve()));
  await done;
  reader.stdin!.end();
  const out = await new Promise<string>((resolve) => {
    let s = '';
    reader.stdout!.on('data', (d) => (s += d));
    reader.on('exit', () => resolve(s));
  });
  const got = JSON.parse(out) as { n: number; last: string };
  t.equal(got.n, bytes, 'every byte arrived');
  t.equal(got.last, line(N - 1).trim(), 'the last line last');
});
