// The Actions page sends the server API's methods and shows each reply; a
// publication sent from it reaches the Channels page's live tail and a
// centrifuge-js subscriber of the same server.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startGyre } from '../lib/gyre.js';
import { connect, subscribe } from '../lib/client.js';
import { launch, newPage, byRole, fill, click, openApp, go, waitForText, waitForTextAt } from '../lib/browser.js';

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

async function client(user) {
  const c = await connect(server, { user });
  clients.push(c.client);
  return c;
}

// send fills the Actions form and presses Send; fields maps a field's label
// to its value (the Method select takes the option's value). It returns the
// Reply region's text once it changed from what it was, parsed as JSON.
async function send(page, fields) {
  await go(page, 'Actions');
  await fill(page, 'combobox', 'Method', fields.Method);
  for (const [label, value] of Object.entries(fields)) {
    if (label === 'Method') continue;
    await fill(page, 'textbox', label, value);
  }
  // Send stays disabled while the request is out; until then the Reply
  // region still shows the previous reply (under "Sending …"), which a
  // slow browser would have this read.
  await click(page, 'button', 'Send');
  const button = await byRole(page, 'button', 'Send');
  await page.waitForFunction((el) => !el.disabled, {}, button);
  const shown = await waitForText(page, 'region', 'Reply', (s) => /(done|failed)/.test(s) && /[{]/.test(s));
  const json = shown.slice(shown.indexOf('{'), shown.lastIndexOf('}') + 1);
  try {
    return JSON.parse(json);
  } catch {
    throw new Error(`the Reply region holds no JSON reply:\n${shown}`);
  }
}

test('publish from the Actions page: the reply, the live tail and a subscriber see it', async () => {
  const channel = 'chat:actions-publish';
  const { client: c } = await client('reader');
  const { events } = await subscribe(c, channel);

  // The live tail, open in its own tab before the publication is sent.
  const tail = await newPage(browser);
  await openApp(tail, server);
  await go(tail, 'Channels');
  await fill(tail, 'textbox', 'Search channels', 'chat:*');
  await waitForText(tail, 'table', 'Channels', channel);
  await click(tail, 'link', channel);
  for (const h of ['Presence', 'History', 'Live tail']) await byRole(tail, 'heading', h);
  await byRole(tail, 'list', 'Live tail', { visible: false });
  // Publish only once the tail's stream is open: what comes before is not shown.
  await waitForText(tail, 'region', 'Live tail', (t) => !/connecting/i.test(t.replace(/^Live tail/, '')));
  // The presence list names the subscriber's user.
  await waitForText(tail, 'region', 'Presence', 'reader');

  const page = await newPage(browser);
  await openApp(page, server);
  const reply = await send(page, {
    Method: 'publish',
    Channel: channel,
    Data: JSON.stringify({ text: 'hello from the admin page' }),
    Tags: 'source=admin\nkind=test',
  });
  assert.ok(reply.result, `publish replied ${JSON.stringify(reply)}`);
  assert.equal(typeof reply.result.offset, 'number', JSON.stringify(reply));

  const pub = await events.waitFor('publication', (ctx) => ctx.data?.text === 'hello from the admin page', 'the publication');
  assert.deepEqual(pub.tags, { source: 'admin', kind: 'test' });

  const item = await waitForText(tail, 'list', 'Live tail', 'hello from the admin page');
  assert.match(item, /source/);
  assert.match(item, /admin/);

  // History shows it too, after a reload of the channel view.
  await tail.reload();
  await waitForText(tail, 'region', 'History', 'hello from the admin page');
});

test('broadcast to two channels shows the reply and reaches both', async () => {
  const { client: c } = await client('broadcast-reader');
  const a = await subscribe(c, 'chat:bc-a');
  const b = await subscribe(c, 'chat:bc-b');
  const page = await newPage(browser);
  await openApp(page, server);
  const reply = await send(page, {
    Method: 'broadcast',
    Channels: 'chat:bc-a, chat:bc-b',
    Data: '{"n": 7}',
  });
  assert.ok(reply.result, JSON.stringify(reply));
  assert.equal(reply.result.responses?.length, 2, JSON.stringify(reply));
  await a.events.waitFor('publication', (ctx) => ctx.data?.n === 7);
  await b.events.waitFor('publication', (ctx) => ctx.data?.n === 7);
});

test('unsubscribe a user from a channel shows the reply and ends its subscription', async () => {
  const { client: c } = await client('to-unsubscribe');
  const { events } = await subscribe(c, 'chat:unsub');
  const page = await newPage(browser);
  await openApp(page, server);
  const reply = await send(page, { Method: 'unsubscribe', Channel: 'chat:unsub', User: 'to-unsubscribe' });
  assert.deepEqual(reply, { result: {} });
  await events.waitFor('unsubscribed');
});

test('disconnect a user shows the reply and closes its connection', async () => {
  const { events } = await client('to-disconnect');
  const page = await newPage(browser);
  await openApp(page, server);
  const reply = await send(page, { Method: 'disconnect', User: 'to-disconnect' });
  assert.deepEqual(reply, { result: {} });
  // centrifuge-js reports the server's close as "connecting" (when the code
  // lets it reconnect) or "disconnected" (when it does not).
  const ctx = await events.waitFor(['connecting', 'disconnected'], (c) => c.code >= 3000, 'the disconnect');
  assert.ok(ctx.code >= 3000, JSON.stringify(ctx));
});

test('history_remove shows the reply and empties the history', async () => {
  const channel = 'chat:history-remove';
  await server.publish(channel, { keep: 'until removed' });
  const before = await server.api('history', { channel, limit: 10 });
  assert.equal(before.publications?.length, 1);
  const page = await newPage(browser);
  await openApp(page, server);
  const reply = await send(page, { Method: 'history_remove', Channel: channel });
  assert.deepEqual(reply, { result: {} });
  const after = await server.api('history', { channel, limit: 10 });
  assert.equal(after.publications?.length ?? 0, 0, JSON.stringify(after));
});

test('map_publish, map_stats and map_remove from the Actions page, the Key field included', async () => {
  const channel = 'board:admin';
  const page = await newPage(browser);
  await openApp(page, server);
  const written = await send(page, { Method: 'map_publish', Channel: channel, Key: 'card-1', Data: '{"title": "from the admin page"}' });
  assert.equal(written.result?.offset, 1, JSON.stringify(written));
  const state = await server.api('map_read_state', { channel, limit: -1 });
  assert.deepEqual(state.entries?.map((e) => [e.key, e.data]), [['card-1', { title: 'from the admin page' }]], JSON.stringify(state));
  assert.deepEqual(await send(page, { Method: 'map_stats', Channel: channel }), { result: { num_keys: 1 } });
  const removed = await send(page, { Method: 'map_remove', Channel: channel, Key: 'card-1' });
  assert.equal(removed.result?.offset, 2, JSON.stringify(removed));
  assert.deepEqual(await server.api('map_stats', { channel }), { num_keys: 0 });
});

test('the Data editor flags JSON that does not parse, and nothing is sent', async () => {
  const page = await newPage(browser);
  await openApp(page, server);
  await go(page, 'Actions');
  await fill(page, 'combobox', 'Method', 'publish');
  await fill(page, 'textbox', 'Channel', 'chat:never');
  await fill(page, 'textbox', 'Data', '{"text": ');
  const data = await byRole(page, 'textbox', 'Data');
  await page.waitForFunction((el) => el.getAttribute('aria-invalid') === 'true', {}, data);
  await click(page, 'button', 'Send');
  const alert = await waitForTextAt(page, '::-p-aria([role="alert"])', 'the alert', /json/i);
  assert.match(alert, /invalid json/i);
  assert.match(await waitForText(page, 'region', 'Reply', () => true), /nothing sent/i);
  const history = await server.api('history', { channel: 'chat:never', limit: 1 });
  assert.equal(history.publications?.length ?? 0, 0);
});

test('the channel view pages through history with Older and Newer', async () => {
  const channel = 'chat:paged';
  for (let i = 1; i <= 13; i++) await server.publish(channel, { n: i });
  const page = await newPage(browser);
  await openApp(page, server, `#/channels/${encodeURIComponent(channel)}`);
  const items = async () => {
    const list = await byRole(page, 'list', 'History', { visible: false });
    return list.$$eval('li', (lis) => lis.map((li) => JSON.parse(li.querySelector('pre').textContent).n));
  };
  const until = async (want) => {
    await page.waitForFunction(
      (want) => {
        const list = document.querySelector('[aria-label="History"]');
        if (!list) return false;
        const ns = [...list.querySelectorAll('li pre')].map((p) => { try { return JSON.parse(p.textContent).n; } catch { return null; } });
        return JSON.stringify(ns) === JSON.stringify(want);
      },
      {},
      want,
    ).catch(async (err) => { throw new Error(`History shows ${JSON.stringify(await items())}, want ${JSON.stringify(want)}: ${err.message}`); });
  };
  // Newest first, a page (ten, the app's page size) at a time.
  const newest = [13, 12, 11, 10, 9, 8, 7, 6, 5, 4];
  await until(newest);
  await click(page, 'button', 'Older');
  await until([3, 2, 1]);
  await click(page, 'button', 'Newer');
  await until(newest);
});
