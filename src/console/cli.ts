#!/usr/bin/env node
// `tollgate` (package.json bin; `npx tollgate …`): the operator's console
// from a shell. Subcommands are registered in cli/commands.ts.
import { runCli } from './cli/main.js';

process.exitCode = await runCli(process.argv.slice(2));
