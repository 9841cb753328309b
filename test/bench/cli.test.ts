// The bench's presets (issue 34 item 10): the quick mode runs the scenarios
// every goal reads, briefly enough to finish within two minutes on a 2-vCPU
// VM; --full, --sweep and --mixed keep their own settings.
import t from 'tap';
import { parseOptions, QUICK_SCENARIOS, USAGE } from '../../bench/cli.js';
import { MIXED_SCENARIOS, SCENARIOS } from '../../bench/scenarios.js';

const settings = (argv: string[]) => {
  const o = parseOptions(argv)!;
  return { mode: o.mode, rounds: o.rounds, slotMs: o.slotMs, warmupMs: o.warmupMs, warmTargetMs: o.warmTargetMs, quietMaxMs: o.quietMaxMs };
};

t.test('issue 34 item 10: the quick mode is the goals\' scenarios, 2 rounds of 1 s, quiet waits capped at 0.5 s', async (t) => {
  const quick = parseOptions([])!;
  t.same(quick.scenarios, QUICK_SCENARIOS);
  // goals.ts reads unary, unary-1conn, stream and stream-delay5; the memory goals must see body-100k (the pool thread) and the responses surface.
  for (const id of ['unary', 'unary-1conn', 'stream', 'stream-delay5', 'body-100k', 'responses-unary']) t.ok(quick.scenarios.includes(id), `quick runs ${id}`);
  t.same(settings([]), { mode: 'quick', rounds: 2, slotMs: 1000, warmupMs: 250, warmTargetMs: 1000, quietMaxMs: 500 });
  t.equal(parseOptions(['--quiet-max-ms', '5000'])!.quietMaxMs, 5000, 'the cap can be raised for a quiet machine');
  t.match(USAGE, /quick: the scenarios the goals read \(unary, unary-1conn, stream, stream-delay5, body-100k, responses-unary\),\n\s+2 interleaved rounds of 1 s/);
  t.notMatch(USAGE, /issue \d/i, 'the help names no issue the reader cannot look up');
});

t.test('issue 34 item 10: --full, --sweep and --mixed keep their settings and scenarios', async (t) => {
  t.same(settings(['--full']), { mode: 'full', rounds: 4, slotMs: 4000, warmupMs: 500, warmTargetMs: 3000, quietMaxMs: 5000 });
  t.same(settings(['--sweep']), { mode: 'sweep', rounds: 2, slotMs: 2000, warmupMs: 250, warmTargetMs: 1000, quietMaxMs: 5000 });
  t.same(settings(['--mixed']), { mode: 'quick', rounds: 2, slotMs: 1500, warmupMs: 250, warmTargetMs: 1000, quietMaxMs: 5000 });
  const full = parseOptions(['--full'])!.scenarios;
  for (const id of ['unary-newconn', 'stream-32conn', 'responses-unary', 'responses-stream', 'tokenizer', ...QUICK_SCENARIOS]) t.ok(full.includes(id), `full runs ${id}`);
  t.equal(full.length, SCENARIOS.length - MIXED_SCENARIOS.length, 'every scenario but the mixed ones');
  t.same(parseOptions(['--mixed'])!.scenarios, MIXED_SCENARIOS.map((s) => s.id));
});

t.test('the load side: --load-procs, --sim-procs, --client; a variant\'s node flags', async (t) => {
  t.match(parseOptions([])!, { loadProcs: 1, simProcs: 1, client: 'undici' }, 'one of each, on undici, unless asked');
  t.match(parseOptions(['--load-procs', '2', '--sim-procs', '3', '--client', 'raw'])!, { loadProcs: 2, simProcs: 3, client: 'raw' });
  t.throws(() => parseOptions(['--client', 'curl']), /--client expects undici or raw/);
  t.throws(() => parseOptions(['--load-procs', '0']), /--load-procs: '0' is not a positive integer/);
  const [sgc] = parseOptions(['--variant', 'sgc:NODE_ARGS=--single-threaded-gc --v8-pool-size=1,PISCINA_NICE=19'])!.variants;
  t.same(sgc, { name: 'sgc', env: { PISCINA_NICE: '19' }, nodeArgs: ['--single-threaded-gc', '--v8-pool-size=1'] }, 'NODE_ARGS are node flags, not environment');
  t.same(parseOptions(['--variant', 'old:HEAP_SEMI_SPACE_MB=2'])!.variants[0], { name: 'old', env: { HEAP_SEMI_SPACE_MB: '2' } });
});
