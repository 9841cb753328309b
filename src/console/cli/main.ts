// The `tollgate` command's dispatcher: finds the subcommand, parses its
// flags, opens the store on first use, prints refusals the way the console
// API states them (its message names each member and rule) and sets the exit status:
// 0 done, 1 refused or failed, 2 wrong invocation.
import { parseArgs } from 'node:util';
import { loadConfig } from '../../config/load.js';
import type { Config } from '../../config/types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { COMMANDS } from './commands.js';
import { UsageError, type CliContext, type CliStore, type Command } from './command.js';
import { openCliStore } from './store.js';

export interface CliIo {
  out(text: string): void;
  err(text: string): void;
}

const STD_IO: CliIo = {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
};

function usageOf(c: Command): string {
  const lines = [`usage: tollgate ${c.path.join(' ')}${c.args ? ' ' + c.args : ''} [options]`, `  ${c.summary}`];
  for (const [name, o] of Object.entries(c.options)) lines.push(`  --${(name + (o.type === 'string' ? ' VALUE' : '')).padEnd(24)} ${o.help}`);
  return lines.join('\n') + '\n';
}

function overview(): string {
  const lines = ['usage: tollgate <command> [options]', '', 'commands:'];
  for (const c of COMMANDS) lines.push(`  ${(c.path.join(' ') + ' ' + c.args).padEnd(28)} ${c.summary}`);
  lines.push('', 'The store: DATABASE_URL when set, else the gateway running on DATA_DIR, else DATA_DIR opened directly.');
  lines.push('`tollgate <command> --help` describes one command.');
  return lines.join('\n') + '\n';
}

/** The command whose words start argv, longest first. */
function find(argv: string[]): Command | undefined {
  return [...COMMANDS].sort((a, b) => b.path.length - a.path.length).find((c) => c.path.every((w, i) => argv[i] === w));
}

export async function runCli(argv: string[], io: CliIo = STD_IO, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  if (argv.length === 0 || ['help', '--help', '-h'].includes(argv[0])) {
    io.out(overview());
    return argv.length === 0 ? 2 : 0;
  }
  const command = find(argv);
  if (command === undefined) {
    io.err(`tollgate: unknown command "${argv.slice(0, 2).join(' ')}"\n\n${overview()}`);
    return 2;
  }
  let store: CliStore | null = null;
  let config: Config | null = null;
  const ctx: CliContext = {
    config: () => (config ??= loadConfig(env)),
    async store() {
      store ??= await openCliStore(ctx.config());
      return store;
    },
    out: io.out,
    err: io.err,
  };
  try {
    const options = Object.fromEntries(Object.entries(command.options).map(([k, o]) => [k, o.short === undefined ? { type: o.type } : { type: o.type, short: o.short }]));
    let parsed;
    try {
      parsed = parseArgs({ args: argv.slice(command.path.length), options: { ...options, help: { type: 'boolean' } }, allowPositionals: true, strict: true });
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    if (parsed.values.help === true) {
      io.out(usageOf(command));
      return 0;
    }
    await command.run(parsed.positionals, parsed.values as Record<string, string | boolean | undefined>, ctx);
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`tollgate: ${err.message}\n\n${usageOf(command)}`);
      return 2;
    }
    if (err instanceof GatewayError) {
      // The message states the field rules (GatewayError's fieldMessage); only those it left out follow, one a line.
      io.err(`tollgate: ${err.message} (${err.code})\n`);
      for (const d of err.fieldDetails ?? []) {
        const rule = `${d.field}: ${d.issue}`;
        if (!err.message.includes(rule)) io.err(`  ${rule}\n`);
      }
      return 1;
    }
    const opened = store as CliStore | null;
    io.err(`tollgate: ${(err as Error)?.message ?? String(err)}${opened !== null ? ` (store: ${opened.where})` : ''}\n`);
    return 1;
  } finally {
    await (store as CliStore | null)?.close().catch(() => {});
  }
}
