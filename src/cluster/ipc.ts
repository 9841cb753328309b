// Moved to src/ipc/channel.ts (issue 14). Only bench/ledger-roundtrip.ts still imports this path;
// delete this file once it imports '../src/ipc/channel.js'.
export { PrimaryChannel, WorkerChannel } from '../ipc/channel.js';
