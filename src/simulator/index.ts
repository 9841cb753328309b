// The simulator supplier: an HTTP server impersonating OpenAI- and
// Anthropic-style model suppliers, deterministic, with real o200k token counts.
export { startSimulator } from './server.js';
export type { Protocol, Simulator, SimulatorEvent, SimulatorListener, SimulatorOptions } from './types.js';
export { INPUT_TOKENS_PER_MESSAGE } from './tokens.js';
