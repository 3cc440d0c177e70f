// Two gyre nodes on one Redis: the Status page of one lists both, and the
// live tail opened on one shows what is published through the other.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startGyre } from '../lib/gyre.js';
import { connect, subscribe } from '../lib/client.js';
import { launch, newPage, byRole, fill, click, openApp, go, waitForText } from '../lib/browser.js';
import { redisMissing, startRedis } from '../../sdk/js/lib/redis.js';

// Without redis-server the tests fail, but for GYRE_SKIP_REDIS=1, where they
// are skipped (as the other tests on Redis are).
const missing = redisMissing();
const skip = missing && process.env.GYRE_SKIP_REDIS === '1' ? missing : false;

describe('two nodes on one Redis', { skip }, () => {
  let redis;
  let nodeA;
  let nodeB;
  let browser;
  const clients = [];

  before(async () => {
    if (missing) throw new Error(missing);
    redis = await startRedis();
    const on = (name) => ({ extra: { node: { name }, engine: { type: 'redis', redis: { address: [redis.addr] } } } });
    nodeA = await startGyre(on('admin-node-a'));
    nodeB = await startGyre(on('admin-node-b'));
    browser = await launch();
  });

  after(async () => {
    for (const c of clients) c.disconnect();
    await browser?.close();
    for (const n of [nodeA, nodeB]) await n?.stop();
    await redis?.stop();
  });

  test("one node's Status page lists every node of the cluster", async () => {
    const page = await newPage(browser);
    await openApp(page, nodeA);
    await go(page, 'Status');
    // Node B shows once it announced itself through Redis.
    const shown = await waitForText(page, 'table', 'Nodes', (t) => t.includes('admin-node-a') && t.includes('admin-node-b'), { timeout: 30000 });
    assert.match(shown, /Healthy/);
  });

  test("the live tail on one node shows what another node's Actions page publishes", async () => {
    const channel = 'chat:cluster-tail';
    // A centrifuge-js subscriber on node B receives it as well.
    const { client } = await connect(nodeB, { user: 'on-b' });
    clients.push(client);
    const { events } = await subscribe(client, channel);

    const tail = await newPage(browser);
    await openApp(tail, nodeA, `#/channels/${encodeURIComponent(channel)}`);
    await byRole(tail, 'list', 'Live tail', { visible: false });
    await waitForText(tail, 'region', 'Live tail', (t) => !/connecting/i.test(t.replace(/^Live tail/, '')));

    const page = await newPage(browser);
    await openApp(page, nodeB);
    await go(page, 'Actions');
    await fill(page, 'combobox', 'Method', 'publish');
    await fill(page, 'textbox', 'Channel', channel);
    await fill(page, 'textbox', 'Data', '{"via": "node b"}');
    await fill(page, 'textbox', 'Tags', 'node=b');
    await click(page, 'button', 'Send');
    await waitForText(page, 'region', 'Reply', '"offset"');

    await events.waitFor('publication', (ctx) => ctx.data?.via === 'node b');
    const item = await waitForText(tail, 'list', 'Live tail', 'node b');
    assert.match(item, /node=b/);
  });
});
