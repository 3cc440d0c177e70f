// Logging in and out, the Status page, keyboard-only use and the narrow screen.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startGyre, NODE_NAME, ADMIN_PASSWORD } from '../lib/gyre.js';
import { connect, subscribe } from '../lib/client.js';
import { contrastProblems } from '../lib/contrast.js';
import {
  launch, newPage, aria, byRole, fill, click, login, go, waitForText, waitForTextAt, horizontalOverflow,
  tabTo as tabToEl,
} from '../lib/browser.js';

let server;
let browser;

before(async () => {
  server = await startGyre();
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

test('a wrong password is refused and the alert says so', async () => {
  const page = await newPage(browser);
  await page.goto(server.adminUrl);
  await fill(page, 'textbox', 'Password', 'not-the-password');
  await click(page, 'button', 'Log in');
  // The alert region may have no accessible name: it is found by role alone.
  const alert = await waitForTextAt(page, '::-p-aria([role="alert"])', 'the alert', /\S/);
  assert.match(alert, /wrong password/i);
  // Still on the login form, no navigation.
  assert.equal(await page.$(aria('navigation', 'Main')), null);
  await byRole(page, 'textbox', 'Password');
});

test('log in, see the node on the Status page, log out', async () => {
  const page = await newPage(browser);
  await page.goto(server.adminUrl);
  await login(page);
  await go(page, 'Status');
  const nodes = await waitForText(page, 'table', 'Nodes', NODE_NAME);
  assert.ok(nodes.includes(NODE_NAME), nodes);
  // The headers, in order, and each as a screen reader names it.
  const table = await byRole(page, 'table', 'Nodes');
  const headers = await table.$$eval('thead th', (ths) => ths.map((th) => th.textContent.trim()));
  const want = ['Name', 'Version', 'Uptime', 'Clients', 'Users', 'Subscriptions', 'Channels', 'Publish rate', 'Memory', 'Broker'];
  assert.deepEqual(headers, want);
  for (const name of want) await byRole(page, 'columnheader', name);

  // The page follows the cluster: a client that connects shows in the Clients
  // column at a later refresh (nodes report on their info interval).
  const { client } = await connect(server, { user: 'status-watcher' });
  try {
    await page.waitForFunction(
      (name) => {
        const table = [...document.querySelectorAll('table')].find((t) => t.caption?.textContent.trim() === 'Nodes');
        if (!table) return false;
        const headers = [...table.querySelectorAll('thead th, tr:first-child th')].map((th) => th.textContent.trim());
        const col = headers.indexOf('Clients');
        const row = [...table.querySelectorAll('tbody tr')].find((tr) => tr.textContent.includes(name));
        return col >= 0 && row && row.children[col]?.textContent.trim() === '1';
      },
      { timeout: 30000, polling: 250 },
      NODE_NAME,
    );
  } finally {
    client.disconnect();
  }

  await click(page, 'button', 'Log out');
  await byRole(page, 'textbox', 'Password');
  // The token is gone: a reload shows the login form again.
  await page.reload();
  await byRole(page, 'textbox', 'Password');
});

test('log in and move between pages with the keyboard only', async () => {
  const page = await newPage(browser);
  await page.goto(server.adminUrl);
  await byRole(page, 'textbox', 'Password');

  const tabTo = (role, name, opts) => tabToEl(page, role, name, opts);

  await tabTo('textbox', 'Password');
  await page.keyboard.type(ADMIN_PASSWORD);
  await tabTo('button', 'Log in');
  const outline = await page.evaluate(() => {
    const s = getComputedStyle(document.activeElement);
    return { outline: s.outlineStyle, width: s.outlineWidth, shadow: s.boxShadow };
  });
  assert.ok(
    (outline.outline !== 'none' && outline.width !== '0px') || outline.shadow !== 'none',
    `the focused button shows no focus ring: ${JSON.stringify(outline)}`,
  );
  await page.keyboard.press('Enter');
  await byRole(page, 'navigation', 'Main');

  await tabTo('link', 'Actions');
  await page.keyboard.press('Enter');
  await byRole(page, 'button', 'Send');

  // The page moved the focus to its heading: back up to the navigation.
  await tabTo('link', 'Status', { back: true });
  await page.keyboard.press('Enter');
  await waitForText(page, 'table', 'Nodes', NODE_NAME);
});

test('at 360px wide no page scrolls sideways', async () => {
  const page = await newPage(browser, { width: 360, height: 740 });
  await page.goto(server.adminUrl);
  await byRole(page, 'textbox', 'Password');
  assert.equal(await horizontalOverflow(page), 0, 'login page overflows');
  await login(page);
  const checks = {
    Status: () => waitForText(page, 'table', 'Nodes', NODE_NAME),
    Channels: () => byRole(page, 'textbox', 'Search channels'),
    'Event hooks': () => byRole(page, 'heading', 'No event hooks configured'),
    Actions: () => byRole(page, 'button', 'Send'),
    Filters: () => byRole(page, 'button', 'Apply'),
    Tokens: () => byRole(page, 'button', 'Generate'),
  };
  for (const [name, shown] of Object.entries(checks)) {
    await go(page, name);
    await shown();
    assert.equal(await horizontalOverflow(page), 0, `${name} page is wider than 360px`);
  }
  await server.api('publish', { channel: 'chat:a-rather-long-channel-name-for-a-narrow-screen', data: { text: 'x'.repeat(200) }, tags: { kind: 'long' } });
  await page.goto(`${server.adminUrl}#/channels/${encodeURIComponent('chat:a-rather-long-channel-name-for-a-narrow-screen')}`);
  await waitForText(page, 'region', 'History', 'xxxx');
  assert.equal(await horizontalOverflow(page), 0, 'the channel view is wider than 360px');
});


test('every page has AA contrast, in the light and the dark colour scheme', async () => {
  // Something in every part of the pages: a subscriber, a publication with tags.
  const { client } = await connect(server, { user: 'contrast' });
  await subscribe(client, 'chat:contrast');
  await server.api('publish', { channel: 'chat:contrast', data: { text: 'shown' }, tags: { kind: 'check' } });
  try {
    for (const scheme of ['light', 'dark']) {
      const page = await newPage(browser);
      await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: scheme }]);
      const check = async (what) => {
        const problems = await page.evaluate(contrastProblems);
        assert.deepEqual(problems, [], `${scheme} scheme, ${what}:\n${problems.join('\n')}`);
      };
      await page.goto(server.adminUrl);
      await fill(page, 'textbox', 'Password', 'wrong');
      await click(page, 'button', 'Log in');
      await waitForTextAt(page, '::-p-aria([role="alert"])', 'the alert', /wrong password/i);
      await check('login with its alert');
      await login(page);
      const pages = {
        Status: () => waitForText(page, 'table', 'Nodes', NODE_NAME),
        Channels: () => waitForText(page, 'table', 'Channels', 'chat:contrast'),
        'Event hooks': () => byRole(page, 'heading', 'No event hooks configured'),
        Actions: () => byRole(page, 'button', 'Send'),
        Filters: () => byRole(page, 'button', 'Apply'),
        Tokens: () => byRole(page, 'button', 'Generate'),
      };
      for (const [name, shown] of Object.entries(pages)) {
        await go(page, name);
        await shown();
        await check(name);
      }
      await go(page, 'Channels');
      await click(page, 'link', 'chat:contrast');
      await waitForText(page, 'region', 'History', 'shown');
      await waitForText(page, 'region', 'Presence', 'contrast');
      await check('the channel view');
    }
  } finally {
    client.disconnect();
  }
});
