// A settled call's usage row is made into the store's COPY line once, in its
// worker (src/ledger/usage-line.ts), and that line is also what the worker's
// books' file keeps (books-file.ts): the primary reads it back when the
// worker dies. So the line must read back as the row it was made from, its
// timestamps must be what Date.toISOString writes, and a line torn anywhere
// by a kill -9 must never read back as a call.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { readGoneWorker, rowLine } from '../../src/ledger/books-file.js';
import type { UsageRow } from '../../src/ledger/protocol.js';
import { readUsageLine, timestampField, usageLine } from '../../src/ledger/usage-line.js';
import { prng } from '../helpers/prng.js';
import { usage } from './helpers.js';
import { tempDir } from '../helpers/gateway.js';

const HOSTILE = ['', '\\N', 'N', '\\', '\t', '\n', '\r', 'a\tb\nc\\d\re', '\\t', 'é ü 中文 🙂', 'x'.repeat(300)];

function randomRow(r: () => number, i: number): UsageRow {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const text = (): string => (r() < 0.5 ? pick(HOSTILE) : `s${Math.floor(r() * 1e6)}`);
  const int = (): number => pick([0, 1, 7, 2 ** 31, Number.MAX_SAFE_INTEGER, Math.floor(r() * 1e9)]);
  return {
    requestId: `req_${i}${r() < 0.2 ? pick(HOSTILE) : ''}`,
    orgId: text(),
    keyId: text(),
    modelId: text(),
    supplier: r() < 0.3 ? null : text(),
    surface: text(),
    funding: pick(['balance', 'package'] as const),
    inputTokens: int(),
    cachedInputTokens: int(),
    outputTokens: int(),
    imageUnits: int(),
    reservedMicros: int(),
    chargedMicros: r() < 0.05 ? Number.NaN : int(),
    overdraftMicros: int(),
    outcome: text(),
    meteredSource: r() < 0.3 ? null : text(),
    holdExpired: r() < 0.5,
    ttfbMs: r() < 0.3 ? null : int(),
    totalMs: int(),
    finishedAt: Math.floor((r() - 0.3) * 4e12),
  };
}

t.test('a usage line reads back as the row and the tag it was made from', async (t) => {
  const r = prng(20261127);
  let wrong = 0;
  for (let i = 0; i < 3000; i++) {
    const u = randomRow(r, i);
    const writer = r() < 0.3 ? null : `42-${i}${r() < 0.3 ? '\t\\' : ''}`;
    const line = usageLine(u, writer);
    if (!line.endsWith('\n') || line.slice(0, -1).includes('\n')) wrong++;
    const back = readUsageLine(line.slice(0, -1));
    if (back === null || back.writer !== writer || !sameRow(back.usage, u)) {
      if (wrong++ < 3) t.fail(`line ${JSON.stringify(line)} read back as ${JSON.stringify(back)}`);
    }
  }
  t.equal(wrong, 0, '3,000 random rows, odd text in every field: each line one line, read back whole');
  t.equal(readUsageLine('a\tb'), null, 'not a line of 21 fields');
});

function sameRow(a: UsageRow, b: UsageRow): boolean {
  return Object.keys(b).every((k) => Object.is(a[k as keyof UsageRow], b[k as keyof UsageRow])) && Object.keys(a).length === Object.keys(b).length;
}

t.test('timestamps: what Date.toISOString writes, one Date per second', async (t) => {
  const r = prng(7);
  const cases = [0, 999, 1000, -1, -999, -1000, -1001, 1_764_000_000_123, 8.64e15, -8.64e15, 253_402_300_799_999, 253_402_300_800_000];
  for (let i = 0; i < 20_000; i++) cases.push(Math.floor((r() - 0.5) * 2 * 8.64e15));
  for (let i = 0; i < 2000; i++) cases.push(1_764_000_000_000 + i); // consecutive milliseconds, as a batch's rows
  let wrong = 0;
  for (const ms of cases) if (timestampField(ms) !== new Date(ms).toISOString() && wrong++ < 3) t.fail(`${ms}: ${timestampField(ms)}`);
  t.equal(wrong, 0, `${cases.length} instants, from the year −271821 to 275760`);
  t.equal(timestampField(1.5), new Date(1.5).toISOString(), 'a fraction of a millisecond: as toISOString');
  for (const bad of [Number.NaN, Infinity, 8.64e15 + 1, '1' as unknown as number]) t.equal(timestampField(bad), '\\N', `${String(bad)}: not a date`);
});

t.test('the books file: calls as made lines read back whole; a line torn anywhere is never a call', async (t) => {
  const dir = tempDir('usage-line-test-');
  const writer = '4343-beef';
  const odd = { ...usage('odd', 700, 1000), modelId: 'm\t1\n2\\3\r', supplier: null, ttfbMs: null, holdExpired: true, finishedAt: 1_764_000_000_123 };
  const plain = usage('plain', 0, 1000);
  const line = (u: UsageRow, allotment: string): string => rowLine(allotment, 1000, usageLine(u, u.chargedMicros > 0 ? writer : null));
  const whole = line(odd, 'w:1/a1') + '{"cut":1}\n' + line(plain, 'w:1/a\t2');
  writeFileSync(join(dir, `${writer}.jsonl`), whole);
  const [found] = readGoneWorker(dir, 4343);
  t.same(found!.batches.map((b) => b.calls), [[{ usage: odd, allotment: 'w:1/a1', taken: 1000 }]], 'a cut batch, its row whole');
  t.same(found!.uncut, [{ usage: plain, allotment: 'w:1/a\t2', taken: 1000 }], 'an uncut call, its allotment\'s odd text too');
  const last = line(usage('torn', 500, 1000), 'w:1/a1');
  let misread = 0;
  for (let cut = 0; cut < last.length; cut++) {
    writeFileSync(join(dir, `${writer}.jsonl`), whole + last.slice(0, cut));
    const uncut = readGoneWorker(dir, 4343)[0]!.uncut.map((c) => c.usage.requestId);
    if (uncut.join() !== 'plain') misread++;
  }
  t.equal(misread, 0, `the last line cut at each of its ${last.length} places: never read as a call`);
});
