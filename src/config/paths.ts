// Where the package's own files are, whether we run from dist/ (production)
// or from src/ through the test loader.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(start: string): string {
  let dir = start;
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'config'))) return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error(`package root not found above ${start}`);
    dir = up;
  }
}

export const packageRoot = findRoot(dirname(fileURLToPath(import.meta.url)));
export const configDir = join(packageRoot, 'config');
