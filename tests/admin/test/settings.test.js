// The app under other settings, each on its own server: admin.handler_prefix,
// admin.insecure (no login), no HMAC key (no tokens), and the login limit
// (which locks the test's address out of that server).

import { test, after } from 'node:test';
import assert from 'node:assert/strict';

import { startGyre, NODE_NAME, ADMIN_PASSWORD } from '../lib/gyre.js';
import { launch, newPage, aria, byRole, fill, click, login, go, waitForText, waitForTextAt } from '../lib/browser.js';

const servers = [];
let browser;

after(async () => {
  await browser?.close();
  for (const s of servers) await s.stop();
});

async function start(admin, opts = {}) {
  const s = await startGyre({ admin, ...opts });
  servers.push(s);
  browser ??= await launch();
  return s;
}

test('under handler_prefix "/ops" the app logs in, shows the node and publishes', async () => {
  const server = await start({ handler_prefix: '/ops' });
  const page = await newPage(browser);
  const res = await page.goto(server.adminUrl);
  assert.equal(res.status(), 200);
  await login(page);
  await go(page, 'Status');
  await waitForText(page, 'table', 'Nodes', NODE_NAME);
  assert.ok(page.url().startsWith(`${server.httpUrl}/ops/`), page.url());

  await go(page, 'Actions');
  await fill(page, 'combobox', 'Method', 'publish');
  await fill(page, 'textbox', 'Channel', 'chat:prefixed');
  await fill(page, 'textbox', 'Data', '{"under": "/ops"}');
  await click(page, 'button', 'Send');
  await waitForText(page, 'region', 'Reply', '"offset"');

  // A client-side route reloaded under the prefix serves the app again.
  await page.reload();
  await byRole(page, 'navigation', 'Main');
  // Nothing of the app at the root.
  const root = await fetch(`${server.httpUrl}/admin/init`);
  assert.equal(root.status, 404);
});

test('with admin.insecure the app opens without a login', async () => {
  const server = await start({ insecure: true, password: '', secret: '' });
  const page = await newPage(browser);
  await page.goto(server.adminUrl);
  await byRole(page, 'navigation', 'Main');
  assert.equal(await page.$(aria('textbox', 'Password')), null, 'insecure mode shows a login form');
  await go(page, 'Status');
  await waitForText(page, 'table', 'Nodes', NODE_NAME);
  await go(page, 'Actions');
  await fill(page, 'combobox', 'Method', 'publish');
  await fill(page, 'textbox', 'Channel', 'chat:insecure');
  await fill(page, 'textbox', 'Data', '{"open": true}');
  await click(page, 'button', 'Send');
  await waitForText(page, 'region', 'Reply', '"offset"');
});

test('without an HMAC key the Tokens page says so and offers no form', async () => {
  const server = await start({}, { hmac: false });
  const page = await newPage(browser);
  await page.goto(server.adminUrl);
  await login(page);
  await go(page, 'Tokens');
  await waitForText(page, 'heading', 'No HMAC key is configured', 'No HMAC key');
  assert.equal(await page.$(aria('button', 'Generate')), null, 'a Generate button without a key');
});

test('after too many wrong passwords the login says to wait, and the right one still logs in', async () => {
  const server = await start({});
  const page = await newPage(browser);
  await page.goto(server.adminUrl);
  const alertText = () => waitForTextAt(page, '::-p-aria([role="alert"])', 'the alert', /\S/);
  let refused = '';
  // The limit is 10 failures a minute per address; from the 11th try on,
  // attempts are answered 6 seconds apart and a wrong one says so.
  for (let i = 0; i < 15 && !refused; i++) {
    await fill(page, 'textbox', 'Password', `wrong-${i}`);
    await click(page, 'button', 'Log in');
    await page.waitForFunction(() => !document.querySelector('button[type="submit"]')?.disabled);
    const shown = await alertText();
    if (/too many/i.test(shown)) refused = shown;
    else assert.match(shown, /wrong password/i);
  }
  assert.match(refused, /too many attempts/i);
  assert.match(refused, /try again in \d+ seconds/i);
  await fill(page, 'textbox', 'Password', ADMIN_PASSWORD);
  await click(page, 'button', 'Log in');
  await byRole(page, 'navigation', 'Main');
});
