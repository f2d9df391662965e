// Real Chromium for the console tests: Debian's package (the registry's browser downloads are not
// reachable here), one browser per test file, a screenshot of the page when a test fails.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** Saves what the page showed to test-results/<name>.png, for a failed test. */
export async function screenshotOnFailure(page: Page | undefined, name: string): Promise<void> {
  if (!page || page.isClosed()) return;
  const directory = path.resolve('test-results');
  mkdirSync(directory, { recursive: true });
  const file = path.join(directory, `${name.replace(/[^\w-]+/g, '-').slice(0, 100)}.png`);
  await page.screenshot({ path: file, fullPage: true }).catch(() => {});
}
