// --micro: the micro-benchmarks that live beside the load scenarios, run as
// they are (their own processes, their own output) and attached to the report.
// bench/ledger-roundtrip.ts is owned by the ledger work; this only runs it.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { packageRoot } from '../src/config/paths.js';
import { Spawned } from './procs.js';

export interface MicroResult {
  /** Name → the benchmark's own JSON report (or its printed text when it writes none). */
  results: Record<string, unknown>;
  errors: Record<string, string>;
}

async function runOne(name: string, [script, ...args]: string[], cpus: string | null, outFile: string | null): Promise<unknown> {
  const proc = new Spawned(name, [join(packageRoot, 'dist/bench', script!), ...args], { cpus });
  const code = await proc.exited;
  if (code !== 0) throw new Error(`${name} exited ${code}: ${proc.tail().slice(-800)}`);
  return outFile !== null ? (JSON.parse(readFileSync(outFile, 'utf8')) as unknown) : proc.tail();
}

export async function runMicro(cpus: string | null, log: (s: string) => void): Promise<MicroResult> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-micro-'));
  const out: MicroResult = { results: {}, errors: {} };
  const benches: Array<[string, string[], string | null]> = [
    ['ledger-roundtrip', ['ledger-roundtrip.js', '--out', join(dir, 'ledger.json')], join(dir, 'ledger.json')],
    ['prepare (inline vs pool)', ['micro/prepare.js'], null],
    ['sse-reader (per event)', ['micro/sse-reader.js'], null],
  ];
  for (const [name, args, file] of benches) {
    log(`micro: ${name}…`);
    try {
      out.results[name] = await runOne(name, args, cpus, file);
    } catch (err) {
      // A micro-benchmark in progress elsewhere must not sink the load results.
      out.errors[name] = (err as Error).message;
      log(`micro: ${name} failed: ${(err as Error).message.split('\n')[0]}`);
    }
  }
  rmSync(dir, { recursive: true, force: true });
  return out;
}
