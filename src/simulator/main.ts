// Standalone simulator:
//   node dist/src/simulator/main.js --port 7071 --instances alpha,beta [--host 127.0.0.1]
// Prints {"simulator":url} once listening; closes on SIGTERM or SIGINT.
import { parseArgs } from 'node:util';
import { startSimulator } from './server.js';

const { values } = parseArgs({
  options: {
    host: { type: 'string', default: '127.0.0.1' },
    port: { type: 'string', default: '0' },
    instances: { type: 'string', default: 'alpha' },
  },
});

const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write(`invalid --port ${values.port}\n`);
  process.exit(2);
}
const instances = (values.instances ?? '').split(',').map((s) => s.trim()).filter((s) => s.length > 0);

const sim = await startSimulator({ host: values.host, port, instances });
process.stdout.write(`${JSON.stringify({ simulator: sim.url })}\n`);

const stop = (): void => {
  void sim.close().then(() => process.exit(0));
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
