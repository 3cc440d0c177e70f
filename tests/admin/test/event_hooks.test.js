// The Event hooks page: for a node with event hooks, each hook proxy with
// its counts and its latest events and failures, following them while the
// page is open; for a node without, a notice. The node sends its channel
// state events of "room" to a backend this file runs (node:http), which
// refuses its first two requests with 503, and its user status events to
// a named proxy on a port where nothing listens.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';

import { startGyre, HMAC_SECRET, NODE_NAME } from '../lib/gyre.js';
import { connect, subscribe } from '../lib/client.js';
import { contrastProblems } from '../lib/contrast.js';
import {
  launch, newPage, aria, byRole, openApp, go, waitForText, waitForTextAt, horizontalOverflow, screenshot,
} from '../lib/browser.js';
import { freePort } from '../../sdk/js/lib/server.js';

const STATE = 'channel.proxy.state';
const STATUS = 'user-status';

// startBackend answers channel state requests: 503 for the first `down`
// ones, {} after; taken holds the events it took.
async function startBackend(down) {
  const backend = { taken: [], requests: 0 };
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => { body += chunk; });
    req.on('end', () => {
      backend.requests += 1;
      if (backend.requests <= down) {
        res.writeHead(503).end();
        return;
      }
      backend.taken.push(...JSON.parse(body).events);
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  backend.url = `http://127.0.0.1:${server.address().port}/state`;
  backend.close = () => new Promise((resolve) => server.close(resolve));
  return backend;
}

async function waitTaken(backend, channel, type) {
  const deadline = Date.now() + 15000;
  while (!backend.taken.some((e) => e.channel === channel && e.type === type)) {
    if (Date.now() > deadline) throw new Error(`the backend never took ${channel} ${type}; it took ${JSON.stringify(backend.taken)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// stats reads a proxy section's counters by label.
async function stats(page, name) {
  return page.$eval(aria('region', name), (section) => Object.fromEntries(
    [...section.querySelectorAll('.stat')].map((s) => [s.querySelector('.stat-label').textContent, s.querySelector('.stat-value').textContent]),
  ));
}

// rows are the cells of the recent table of a proxy, one array per row.
async function rows(page, name) {
  return page.$$eval(`${aria('table', `Recent events of ${name}`)} tbody tr`, (trs) => trs.map((tr) => [...tr.cells].map((c) => c.innerText.trim())));
}

// Columns: time | outcome | event | channel or user | event id | batch | attempt | reason
describe('the Event hooks page', () => {
  let backend;
  let node;
  let plain;
  let browser;
  const clients = [];

  before(async () => {
    backend = await startBackend(2);
    const nobody = `http://127.0.0.1:${await freePort()}/status`;
    plain = await startGyre();
    node = await startGyre({
      extra: {
        client: { token: { hmac_secret_key: HMAC_SECRET }, allowed_origins: ['*'], user_status_proxy_name: STATUS },
        proxies: [{ name: STATUS, endpoint: nobody, timeout: '1s' }],
        channel: {
          proxy: { state: { endpoint: backend.url, timeout: '1s' } },
          without_namespace: { allow_subscribe_for_client: true },
          namespaces: [{ name: 'room', allow_subscribe_for_client: true, allow_subscribe_for_anonymous: true, state_proxy_enabled: true }],
        },
      },
    });
    browser = await launch();
  });

  after(async () => {
    for (const c of clients) c.disconnect();
    await browser?.close();
    await node?.stop();
    await plain?.stop();
    await backend?.close();
  });

  test('a node with event hooks shows each proxy, its counts and its latest events and failures', async () => {
    // An anonymous client first: it makes no user status event, which,
    // never delivered, would hold back the channel state events behind it.
    const { client: anon } = await connect(node, { user: '' });
    clients.push(anon);
    await subscribe(anon, 'room:1');
    await waitTaken(backend, 'room:1', 'occupied');

    const page = await newPage(browser);
    await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'light' }]);
    await openApp(page, node);
    await go(page, 'Event hooks');
    await byRole(page, 'heading', 'Event hooks');
    assert.match(await waitForText(page, 'region', STATE, 'Delivering'), /Channel state events \(room\)\./);
    assert.match(await waitForTextAt(page, 'main', 'the page', NODE_NAME), /Every node reports its own/);
    assert.match(await waitForText(page, 'region', STATUS, 'No events yet'), /User status events\.\s+[^]*Nothing delivered, dropped or failed yet/);

    // Newest first: the delivery, then the two refused requests of its batch.
    const state = await rows(page, STATE);
    assert.equal(state.length, 3, JSON.stringify(state));
    const [delivered, second, first] = state;
    assert.deepEqual(delivered.slice(1, 4), ['delivered', 'occupied', 'room:1']);
    assert.deepEqual(delivered.slice(5), ['–', '–', '–']);
    const id = backend.taken.find((e) => e.channel === 'room:1').id;
    assert.equal(delivered[4], id);
    for (const [row, attempt] of [[second, '2'], [first, '1']]) {
      assert.deepEqual(row.slice(1, 7), ['failed', 'occupied', 'room:1', id, '1', attempt]);
      assert.match(row[7], /^status: .*503/);
    }
    assert.deepEqual(await stats(page, STATE), { Queued: '0', Delivered: '1', 'Failed requests': '2', Dropped: '0' });

    // A new channel while the page is open: shown without a reload.
    await subscribe(anon, 'room:2');
    await waitForText(page, 'table', `Recent events of ${STATE}`, 'room:2');
    assert.equal((await stats(page, STATE)).Delivered, '2');

    // The user status proxy reaches nobody: it keeps failing, the user's
    // online event at the head of every attempt.
    const { client: ann } = await connect(node, { user: 'ann' });
    clients.push(ann);
    await waitForText(page, 'region', STATUS, 'Failing');
    await waitForText(page, 'table', `Recent events of ${STATUS}`, 'ann');
    const failing = (await rows(page, STATUS))[0];
    assert.deepEqual(failing.slice(1, 4), ['failed', 'online', 'ann']);
    assert.match(failing[7], /^transport: .*connection refused/);
    const s = await stats(page, STATUS);
    assert.equal(s.Queued, '1');
    assert.equal(s.Delivered, '0');
    assert.notEqual(s['Failed requests'], '0');
    await screenshot(page, 'event-hooks', { fullPage: true });

    // Readable in both colour schemes, no sideways scroll on a phone.
    const dark = await newPage(browser);
    await dark.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'dark' }]);
    await openApp(dark, node, '#/hooks');
    await waitForText(dark, 'region', STATUS, 'Failing');
    await waitForText(dark, 'table', `Recent events of ${STATE}`, 'room:2');
    for (const [scheme, p] of [['light', page], ['dark', dark]]) {
      const problems = await p.evaluate(contrastProblems);
      assert.deepEqual(problems, [], `${scheme} scheme:\n${problems.join('\n')}`);
    }
    const narrow = await newPage(browser, { width: 360, height: 740 });
    await openApp(narrow, node, '#/hooks');
    await waitForText(narrow, 'table', `Recent events of ${STATE}`, 'room:2');
    assert.equal(await horizontalOverflow(narrow), 0);
    for (const p of [page, dark, narrow]) assert.deepEqual(p.problems, []);
  });

  test('a node without event hooks says so', async () => {
    const page = await newPage(browser);
    await openApp(page, plain, '#/hooks');
    await byRole(page, 'heading', 'No event hooks configured');
    assert.equal(await page.$(aria('table', `Recent events of ${STATE}`)), null);
    assert.deepEqual(page.problems, []);
  });
});
