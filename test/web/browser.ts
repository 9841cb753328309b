// Debian's chromium driven by playwright-core (no browser download): found on
// PATH, started headless with a fresh profile and nothing that phones home.
// Screenshots go to test/web/artifacts/ (git-ignored).
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext } from 'playwright-core';
import { packageRoot } from '../../src/config/paths.js';

export const ARTIFACTS = join(packageRoot, 'test/web/artifacts');

export function chromiumPath(): string | null {
  try {
    return execFileSync('which', ['chromium'], { encoding: 'utf8' }).trim() || null;
  } catch {
    return null;
  }
}

export interface Launched {
  browser: Browser;
  close(): Promise<void>;
}

export async function launch(): Promise<Launched> {
  const executablePath = chromiumPath();
  if (executablePath === null) throw new Error('chromium is not installed (apt-get install -y chromium)');
  const browser = await chromium.launch({
    executablePath,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      // A fresh --user-data-dir: playwright's launch() creates a new temporary
      // profile for every browser and removes it on close (it refuses the flag).
    ],
  });
  mkdirSync(ARTIFACTS, { recursive: true });
  return {
    browser,
    async close() {
      await browser.close();
    },
  };
}

export const DESKTOP = { width: 1280, height: 900 };
export const PHONE = { width: 390, height: 844 };

/** A fresh context at a viewport, with the clipboard allowed for `origin`. */
export async function newContext(browser: Browser, origin: string, viewport = DESKTOP, locale = 'en-US'): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport, locale });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
  return context;
}
