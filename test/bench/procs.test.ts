// What the bench reads of a process's memory (bench/procs.ts): RSS from
// /proc/PID/statm, which must agree with what the process itself reports, and
// PSS from smaps_rollup; both null once the process is gone.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import t from 'tap';
import { pssBytes, rssBytes } from '../../bench/procs.js';

t.test('RSS from statm is the process resident set, in bytes', async (t) => {
  // Touch 64 MB first, so a wrong field (statm's size) or a wrong unit (pages) cannot pass.
  const held = Buffer.alloc(64 * 1024 * 1024, 1);
  const before = process.memoryUsage.rss();
  const read = rssBytes(process.pid);
  const after = process.memoryUsage.rss();
  t.ok(read !== null, 'read');
  // The three readings are moments apart: within 8 MB of the process's own figures.
  t.ok(read! >= Math.min(before, after) - 8 * 2 ** 20 && read! <= Math.max(before, after) + 8 * 2 ** 20, `statm ${read} against process.memoryUsage.rss() ${before}…${after}`);
  t.ok(read! > held.length, 'the touched 64 MB are in it');
});

const noRollup = existsSync(`/proc/${process.pid}/smaps_rollup`) ? false : 'this kernel has no /proc/PID/smaps_rollup';
t.test('PSS is at most the RSS and more than nothing', { skip: noRollup }, async (t) => {
  const pss = pssBytes(process.pid);
  const rss = rssBytes(process.pid);
  t.ok(pss !== null && pss > 0, `pss ${pss}`);
  t.ok(pss! <= rss! + 4 * 2 ** 20, `pss ${pss} ≤ rss ${rss}`);
});

t.test('a process that is gone reads null', async (t) => {
  const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  const pid = Number(gone.stdout);
  t.ok(pid > 0);
  t.equal(rssBytes(pid), null);
  t.equal(pssBytes(pid), null);
});
