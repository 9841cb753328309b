// Every `tollgate` subcommand. This list is the one registration point: a new
// command (e.g. `credit`) is a Command in its own file under cli/, added here.
import type { Command } from './command.js';
import { catalogCommands } from './catalog.js';
import { creditCommands } from './credit.js';
import { keyCommands } from './keys.js';
import { orgCommands } from './orgs.js';
import { webCommands } from './web.js';

export const COMMANDS: Command[] = [...orgCommands, ...keyCommands, ...creditCommands, ...catalogCommands, ...webCommands];
