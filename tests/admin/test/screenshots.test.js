// Visits every page with something on it, as the screenshots in docs/admin/
// show them. With GYRE_ADMIN_SCREENSHOTS=1 (scripts/admin-screenshots) it
// saves them there; otherwise it only checks that each page renders.

import { test, before, after } from 'node:test';

import { startGyre, NODE_NAME } from '../lib/gyre.js';
import { connect, subscribe } from '../lib/client.js';
import {
  launch, newPage, byRole, fill, click, openApp, go, waitForText, screenshot,
} from '../lib/browser.js';

let server;
let browser;
const clients = [];

before(async () => {
  server = await startGyre();
  browser = await launch();
  // Some life to show: two users in chat:lobby, a few publications with tags.
  for (const user of ['alice', 'bob']) {
    const { client } = await connect(server, { user });
    clients.push(client);
    await subscribe(client, 'chat:lobby');
  }
  const { client } = await connect(server, { user: 'carol' });
  clients.push(client);
  await subscribe(client, 'chat:support');
  for (const [i, ticker] of ['GOOG', 'MSFT', 'AAPL'].entries()) {
    await server.api('publish', { channel: 'chat:lobby', data: { text: `message ${i + 1}`, ticker }, tags: { ticker } });
  }
});

after(async () => {
  for (const c of clients) c.disconnect();
  await browser?.close();
  await server?.stop();
});

test('every page, at 1280x800 and the status page at 360px', async () => {
  const page = await newPage(browser);
  await page.goto(server.adminUrl);
  await byRole(page, 'textbox', 'Password');
  await screenshot(page, 'login');

  await openApp(page, server);
  await go(page, 'Status');
  await waitForText(page, 'table', 'Nodes', NODE_NAME);
  await screenshot(page, 'status');

  await go(page, 'Channels');
  await waitForText(page, 'table', 'Channels', 'chat:lobby');
  await screenshot(page, 'channels');

  await click(page, 'link', 'chat:lobby');
  await byRole(page, 'list', 'Live tail', { visible: false });
  await server.api('publish', { channel: 'chat:lobby', data: { text: 'live' }, tags: { ticker: 'GOOG' } });
  await waitForText(page, 'list', 'Live tail', 'live');
  await screenshot(page, 'channel', { fullPage: true });

  await go(page, 'Actions');
  await fill(page, 'combobox', 'Method', 'publish');
  await fill(page, 'textbox', 'Channel', 'chat:lobby');
  await fill(page, 'textbox', 'Data', '{\n  "text": "hello from the admin page"\n}');
  await fill(page, 'textbox', 'Tags', 'ticker=GOOG');
  await click(page, 'button', 'Send');
  await waitForText(page, 'region', 'Reply', '"result"');
  await screenshot(page, 'actions');

  await go(page, 'Filters');
  await fill(page, 'textbox', 'Channel', 'chat:lobby');
  await fill(page, 'textbox', 'Filter expression', 'ticker in ("GOOG", "AAPL")');
  await click(page, 'button', 'Apply');
  await waitForText(page, 'list', 'Publications', 'dropped');
  await screenshot(page, 'filters');

  await go(page, 'Tokens');
  await fill(page, 'combobox', 'Token kind', 'connection');
  await fill(page, 'textbox', 'User', 'alice');
  await fill(page, 'textbox', 'Expires in (seconds)', '3600');
  await click(page, 'button', 'Generate');
  await waitForText(page, 'region', 'Token', /\w+\.\w+\./);
  await screenshot(page, 'tokens');

  const narrow = await newPage(browser, { width: 360, height: 740 });
  await openApp(narrow, server);
  await go(narrow, 'Status');
  await waitForText(narrow, 'table', 'Nodes', NODE_NAME);
  await screenshot(narrow, 'status-360');
});
