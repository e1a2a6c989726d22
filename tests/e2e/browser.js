// Headless Chromium for the console's end-to-end tests (Debian's `chromium`,
// through playwright-core): one persistent context per test file, with what
// the page must never do recorded (script errors, CSP violations, requests
// off the server), and screenshots under target/e2e-screenshots/.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
export const SCREENSHOTS = path.resolve(here, '../../target/e2e-screenshots');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

/**
 * Launches Chromium for the server at `base`. Answers `{context, page,
 * pageErrors, cspViolations, foreignRequests, watch(page, origin?), shot(name, element?),
 * close()}`.
 */
export async function launch(base) {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'quayside-e2e-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    acceptDownloads: true,
    viewport: { width: 1280, height: 860 },
    locale: 'en-GB',
    timezoneId: 'Europe/Amsterdam',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  context.setDefaultTimeout(15_000);
  const page = context.pages()[0] ?? (await context.newPage());
  const pageErrors = [];
  const cspViolations = [];
  const foreignRequests = [];
  // A page's errors and requests, recorded; `origin`: the server as that page reaches it (a proxy).
  const watch = (p, origin = base) => {
    p.on('pageerror', (err) => pageErrors.push(err.message));
    p.on('console', (msg) => {
      if (/Content Security Policy|Refused to/i.test(msg.text())) cspViolations.push(msg.text());
    });
    p.on('request', (request) => {
      const url = request.url();
      if (!url.startsWith(origin) && !url.startsWith('blob:') && !url.startsWith('data:')) foreignRequests.push(url);
    });
  };
  watch(page);

  /** Saves a screenshot of the whole page (or of one element) once nothing is loading. */
  async function shot(name, element) {
    const on = element ? element.page() : page;
    await on.locator('#busy').waitFor({ state: 'hidden' });
    const file = path.join(SCREENSHOTS, `${name}.png`);
    // From the top: the sticky bar would otherwise be drawn where the page was
    // scrolled to, over the page or the element.
    await on.evaluate(() => window.scrollTo(0, 0));
    const clip = element ? await element.boundingBox() : undefined;
    await on.screenshot({ path: file, fullPage: true, clip });
  }

  return {
    context,
    page,
    pageErrors,
    cspViolations,
    foreignRequests,
    watch,
    shot,
    async close() {
      await context.close();
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}
