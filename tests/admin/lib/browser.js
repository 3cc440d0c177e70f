// Drives Debian's chromium through puppeteer-core, headless, and selects the
// admin app's elements by role and accessible name, as a screen reader user
// would find them (the names are the app's contract, see docs/admin.md).

import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

import puppeteer from 'puppeteer-core';

import { ADMIN_PASSWORD } from './gyre.js';

export const WAIT_MS = 15000;

// chromiumPath finds the browser: CHROMIUM_BIN, else chromium or
// chromium-browser on the PATH (scripts/install-chromium installs one).
export function chromiumPath() {
  if (process.env.CHROMIUM_BIN) return process.env.CHROMIUM_BIN;
  for (const name of ['chromium', 'chromium-browser']) {
    try {
      return execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim();
    } catch { /* not this one */ }
  }
  throw new Error('no chromium on the PATH: run scripts/install-chromium or set CHROMIUM_BIN');
}

// launch starts a headless Chromium. As root, Chromium refuses to start with
// its sandbox, so it runs without it there (the pages it opens are our own).
export async function launch() {
  const args = ['--disable-dev-shm-usage', '--font-render-hinting=none'];
  if (process.getuid?.() === 0) args.push('--no-sandbox');
  return puppeteer.launch({
    executablePath: chromiumPath(),
    headless: true,
    args,
    defaultViewport: { width: 1280, height: 800 },
  });
}

// newPage opens a page in a fresh browser context (its own storage, so its
// own login) and collects the page's console errors and failed requests, which
// a test can report when it fails.
export async function newPage(browser, { width = 1280, height = 800 } = {}) {
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  await page.setViewport({ width, height });
  page.setDefaultTimeout(WAIT_MS);
  page.problems = [];
  page.on('pageerror', (err) => page.problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error') page.problems.push(`console: ${msg.text()}`);
  });
  page.on('requestfailed', (req) => {
    // An EventSource closed by navigation is not a problem of the app.
    if (!req.url().includes('/admin/tail')) page.problems.push(`request failed: ${req.url()} ${req.failure()?.errorText}`);
  });
  return page;
}

// aria builds a puppeteer ARIA selector for the element of that role and
// accessible name. "textbox" stands for any text field: an input of type
// search is a searchbox and one of type number a spinbutton, and the tests
// should not care which the app chose.
export function aria(role, name) {
  const roles = role === 'textbox' ? ['textbox', 'searchbox', 'spinbutton'] : [role];
  return roles.map((r) => `::-p-aria([name=${JSON.stringify(name)}][role=${JSON.stringify(r)}])`).join(', ');
}

// byRole waits for the element and returns its handle. It must be visible,
// unless visible is false (an empty list has no size, yet is there).
export async function byRole(page, role, name, { visible = true } = {}) {
  const el = await page.waitForSelector(aria(role, name), { visible });
  if (!el) throw new Error(`no ${role} named "${name}"`);
  return el;
}

// fill sets an input, textarea or select (by option value) to value, the way a
// user would: focused, old text replaced, events fired.
export async function fill(page, role, name, value) {
  await page.locator(aria(role, name)).fill(value);
}

export async function click(page, role, name) {
  await page.locator(aria(role, name)).click();
}

// text is what the element shows (innerText: the visible text).
export async function text(el) {
  return el.evaluate((node) => node.innerText ?? node.textContent ?? '');
}

// waitForText waits until the element with that role and name shows text
// that satisfies want (a string it contains, a RegExp, or a function), and
// returns the text.
export async function waitForText(page, role, name, want, opts) {
  return waitForTextAt(page, aria(role, name), `${role} "${name}"`, want, opts);
}

// waitForTextAt is waitForText for any selector.
export async function waitForTextAt(page, selector, what, want, { timeout = WAIT_MS } = {}) {
  const test = typeof want === 'function' ? want
    : want instanceof RegExp ? (s) => want.test(s) : (s) => s.includes(want);
  const deadline = Date.now() + timeout;
  let last = '';
  for (;;) {
    const el = await page.$(selector);
    last = el ? await text(el) : '(not there)';
    if (el && test(last)) return last;
    if (Date.now() > deadline) {
      throw new Error(`${what} never showed ${want}; it shows:\n${last}\n${page.problems.join('\n')}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

// tabTo presses Tab (Shift+Tab with back) until the element with that role
// and name has the focus, and returns it.
export async function tabTo(page, role, name, { back = false, presses = 40 } = {}) {
  for (let i = 0; i <= presses; i++) {
    const el = await page.$(aria(role, name));
    if (el && await el.evaluate((node) => node === document.activeElement)) return el;
    if (i === presses) break;
    if (back) {
      await page.keyboard.down('Shift');
      await page.keyboard.press('Tab');
      await page.keyboard.up('Shift');
    } else {
      await page.keyboard.press('Tab');
    }
  }
  throw new Error(`${back ? 'Shift+Tab' : 'Tab'} never reached the ${role} "${name}"`);
}

// login logs in from the login form with the given password (the configured
// one by default) and waits for the main navigation.
export async function login(page, password = ADMIN_PASSWORD) {
  await fill(page, 'textbox', 'Password', password);
  await click(page, 'button', 'Log in');
  await byRole(page, 'navigation', 'Main');
}

// openApp loads the app at server.adminUrl (plus path) and logs in when the
// login form shows.
export async function openApp(page, server, path = '') {
  await page.goto(server.adminUrl + path, { waitUntil: 'domcontentloaded' });
  // Whichever shows first; the other wait is left to time out unobserved.
  const first = await Promise.race([
    page.waitForSelector(aria('navigation', 'Main')).then(() => 'nav', () => null),
    page.waitForSelector(aria('textbox', 'Password')).then(() => 'login', () => null),
  ]);
  if (first === 'login') await login(page);
  else if (first !== 'nav') throw new Error(`${server.adminUrl}${path}: neither the app nor its login form showed\n${page.problems.join('\n')}`);
}

// go follows a link of the main navigation.
export async function go(page, name) {
  const nav = await byRole(page, 'navigation', 'Main');
  const link = await nav.waitForSelector(aria('link', name), { visible: true });
  await link.click();
}

// horizontalOverflow tells by how many CSS pixels the document is wider than
// the viewport (0 when there is no horizontal scroll).
export async function horizontalOverflow(page) {
  return page.evaluate(() => Math.max(0, document.documentElement.scrollWidth - document.documentElement.clientWidth));
}

// screenshot saves the page when GYRE_ADMIN_SCREENSHOTS is set: into
// docs/admin/ when it is "1", else into the directory it names.
// fullPage takes the whole page instead of the viewport.
export async function screenshot(page, name, { fullPage = false } = {}) {
  const want = process.env.GYRE_ADMIN_SCREENSHOTS;
  if (!want) return;
  const dir = want === '1' ? new URL('../../../docs/admin/', import.meta.url).pathname : want;
  mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: join(dir, `${name}.png`), fullPage });
}
