// The build's last step (`npm run build`, `npm install`, `npm test`): the web assets'
// gzip and brotli forms, made once here rather than by every worker at its
// start (assets.ts).
import { ENCODED_DIR, writeEncodedAssets } from './assets.js';

const written = writeEncodedAssets();
process.stdout.write(`web assets: ${written.length} compressed files in ${ENCODED_DIR}\n`);
