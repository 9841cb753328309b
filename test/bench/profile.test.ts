// bench/profile.ts's reading of a CPU profile: self time by function, and the
// longest run of busy samples with what it was entered through and spent on.
import t from 'tap';
import { summarise, type CpuProfile } from '../../bench/profile.js';

const frame = (functionName: string, url = '', lineNumber = 0) => ({ functionName, url, lineNumber });

t.test('the longest busy run: its length, its GC samples, the tasks it was entered through and its top functions', async (t) => {
  const url = 'file:///x/dist/src/pipeline/run.js';
  const profile: CpuProfile = {
    nodes: [
      { id: 1, callFrame: frame('(root)'), children: [2, 3, 4, 6] },
      { id: 2, callFrame: frame('(idle)') },
      { id: 3, callFrame: frame('listOnTimeout', 'node:internal/timers', 560), children: [5] },
      { id: 4, callFrame: frame('(garbage collector)') },
      { id: 5, callFrame: frame('settle', url, 9) },
      { id: 6, callFrame: frame('runModelCall', url, 10) },
    ],
    startTime: 0,
    // idle, [settle settle gc runModelCall] idle, [settle] idle
    samples: [2, 5, 5, 4, 6, 2, 5, 2],
    timeDeltas: [200, 200, 200, 200, 200, 200, 200, 200],
  };
  const part = summarise(profile, 0, 10_000, 'worker', 1);
  t.match(part.longestBusy, { samples: 4, gcSamples: 1 }, 'four samples back to back, one of them GC');
  t.same(
    part.longestBusy.entries.map((l) => [l.name, l.pct]),
    [
      ['listOnTimeout node:internal/timers:561', 50],
      ['(garbage collector)', 25],
      ['runModelCall dist/src/pipeline/run.js:11', 25],
    ],
    'entered through: the frame below the root of each sample',
  );
  t.equal(part.longestBusy.functions[0]!.name, 'settle dist/src/pipeline/run.js:10', 'its top self time');
  t.equal(part.longestBusy.functions[0]!.pct, 50);
});
