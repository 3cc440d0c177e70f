// The Filters page shows an expression's filter tree and which recent
// publications it keeps; the Tokens page makes tokens a real client connects
// and subscribes with.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startGyre } from '../lib/gyre.js';
import { connect, subscribe } from '../lib/client.js';
import { launch, newPage, aria, byRole, fill, click, openApp, go, waitForText, waitForTextAt } from '../lib/browser.js';

let server;
let browser;
const clients = [];

before(async () => {
  server = await startGyre();
  browser = await launch();
});

after(async () => {
  for (const c of clients) c.disconnect();
  await browser?.close();
  await server?.stop();
});

test('the Filters page shows the filter tree and kept and dropped publications', async () => {
  const channel = 'chat:filters';
  await server.api('publish', { channel, data: { n: 1 }, tags: { ticker: 'GOOG' } });
  await server.api('publish', { channel, data: { n: 2 }, tags: { ticker: 'MSFT' } });
  await server.api('publish', { channel, data: { n: 3 }, tags: { ticker: 'AAPL' } });

  const page = await newPage(browser);
  await openApp(page, server);
  await go(page, 'Filters');
  await fill(page, 'textbox', 'Channel', channel);
  await fill(page, 'textbox', 'Filter expression', 'ticker in ("GOOG", "AAPL")');
  await click(page, 'button', 'Apply');

  const treeText = await waitForText(page, 'region', 'Filter tree', '"in"');
  const tree = JSON.parse(treeText.slice(treeText.indexOf('{'), treeText.lastIndexOf('}') + 1));
  assert.equal(tree.key, 'ticker', treeText);
  assert.equal(tree.cmp, 'in', treeText);
  assert.deepEqual(tree.vals, ['GOOG', 'AAPL'], treeText);

  await waitForText(page, 'list', 'Publications', 'dropped');
  const list = await byRole(page, 'list', 'Publications');
  const items = await list.$$eval('li', (els) => els.map((e) => e.innerText));
  assert.equal(items.length, 3, items.join('\n---\n'));
  const verdict = (ticker) => {
    const item = items.find((t) => t.includes(ticker));
    assert.ok(item, `no item for ${ticker}:\n${items.join('\n---\n')}`);
    return /\bdropped\b/i.test(item) ? 'dropped' : /\bkept\b/i.test(item) ? 'kept' : '?';
  };
  assert.equal(verdict('GOOG'), 'kept');
  assert.equal(verdict('AAPL'), 'kept');
  assert.equal(verdict('MSFT'), 'dropped');

  // A bad expression is reported, not thrown away.
  await fill(page, 'textbox', 'Filter expression', 'ticker in (');
  await click(page, 'button', 'Apply');
  await waitForTextAt(page, '::-p-aria([role="alert"])', 'the alert', /\S/);
});

// generate fills the Tokens form, presses Generate and returns the token the
// Token region shows, with its claims.
async function generate(page, fields) {
  await go(page, 'Tokens');
  await fill(page, 'combobox', 'Token kind', fields.kind);
  await fill(page, 'textbox', 'User', fields.user);
  if (fields.channel) await fill(page, 'textbox', 'Channel', fields.channel);
  await fill(page, 'textbox', 'Expires in (seconds)', String(fields.ttl ?? 600));
  await click(page, 'button', 'Generate');
  const shown = await waitForText(page, 'region', 'Token', /[\w-]+\.[\w-]+\.[\w-]+/);
  await byRole(page, 'button', 'Copy');
  const token = shown.match(/[\w-]+\.[\w-]+\.[\w-]+/)[0];
  const claims = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString());
  return { token, claims };
}

test('a connection token from the Tokens page connects a centrifuge-js client', async () => {
  const page = await newPage(browser);
  await openApp(page, server);
  const { token, claims } = await generate(page, { kind: 'connection', user: 'token-user', ttl: 600 });
  assert.equal(claims.sub, 'token-user');
  assert.ok(claims.exp > Date.now() / 1000 && claims.exp <= Date.now() / 1000 + 660, JSON.stringify(claims));

  const { client } = await connect(server, { token });
  clients.push(client);
  await subscribe(client, 'chat:token-presence');
  const presence = await server.api('presence', { channel: 'chat:token-presence' });
  const users = Object.values(presence.presence ?? {}).map((p) => p.user);
  assert.deepEqual(users, ['token-user']);
});

test('a subscription token from the Tokens page lets the client into a private channel', async () => {
  const page = await newPage(browser);
  await openApp(page, server);
  const conn = await generate(page, { kind: 'connection', user: 'private-user' });
  const sub = await generate(page, { kind: 'subscription', user: 'private-user', channel: 'private:room' });
  assert.equal(sub.claims.channel, 'private:room');

  const { client } = await connect(server, { token: conn.token });
  clients.push(client);
  await subscribe(client, 'private:room', { token: sub.token });
  const presence = await server.api('presence', { channel: 'private:room' });
  assert.deepEqual(Object.values(presence.presence ?? {}).map((p) => p.user), ['private-user']);
});
