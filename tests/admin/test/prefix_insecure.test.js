// The app under admin.handler_prefix, with admin.insecure (no login), and
// without an HMAC key (no tokens).

import { test, after } from 'node:test';
import assert from 'node:assert/strict';

import { startGyre, NODE_NAME } from '../lib/gyre.js';
import { launch, newPage, aria, byRole, fill, click, login, go, waitForText } from '../lib/browser.js';

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
