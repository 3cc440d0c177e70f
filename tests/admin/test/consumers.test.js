// The Status page's Consumers table: shown for a node that runs consumers,
// with each one's state and counters, refreshed as they move; absent for a
// node without consumers. The node runs two real redis_stream consumers:
// "feed" on a redis-server this file starts, fed with redis-cli XADD, and
// "offline" on a port where nothing listens.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

import { startGyre, NODE_NAME } from '../lib/gyre.js';
import { contrastProblems } from '../lib/contrast.js';
import { launch, newPage, aria, openApp, waitForText, horizontalOverflow } from '../lib/browser.js';
import { redisMissing, startRedis } from '../../sdk/js/lib/redis.js';
import { freePort } from '../../sdk/js/lib/server.js';

const run = promisify(execFile);

const STREAM = 'admin-feed';
const GROUP = 'admin-test';
const CHANNEL = 'chat:consumed';

// Without redis-server the test of the node with consumers fails, but for
// GYRE_SKIP_REDIS=1, where it is skipped (as the other tests on Redis are).
const missing = redisMissing();
const skip = missing && process.env.GYRE_SKIP_REDIS === '1' ? missing : false;

const publish = (n) => JSON.stringify({ method: 'publish', payload: { channel: CHANNEL, data: { n } } });

// redisCli runs one command on the Redis at addr and returns its reply,
// which must match want: redis-cli exits 0 on an error reply too.
async function redisCli(addr, want, ...args) {
  const [host, port] = addr.split(':');
  const { stdout } = await run('redis-cli', ['-h', host, '-p', port, ...args]);
  const reply = stdout.trim();
  if (!want.test(reply)) throw new Error(`redis-cli ${args.join(' ')}: ${reply}`);
  return reply;
}

// produce adds one entry per payload to the stream, in order.
async function produce(addr, payloads) {
  for (const p of payloads) await redisCli(addr, /^\d+-\d+$/, 'XADD', STREAM, '*', 'payload', p);
}

// rowText is the text of the table row whose header cell is name.
async function rowText(page, name) {
  return page.$$eval(`${aria('table', 'Consumers')} tbody tr`, (rows, want) => {
    const row = rows.find((r) => r.querySelector('th')?.textContent === want);
    return row ? [...row.cells].map((c) => c.innerText.trim()).join(' | ') : '';
  }, name);
}

// Columns: name | type | state | processed | skipped | retries | source errors | lag | last processed | last error
const cells = (row) => row.split(' | ');
const num = (cell) => Number(cell.replace(/,/g, ''));

async function waitForRow(page, name, want) {
  const deadline = Date.now() + 15000;
  let last = '';
  for (;;) {
    last = await rowText(page, name);
    if (last && want(cells(last))) return cells(last);
    if (Date.now() > deadline) throw new Error(`consumer ${name} never showed what was wanted; its row: ${last}\n${page.problems.join('\n')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('consumers on the Status page', () => {
  let redis;
  let node;
  let plain;
  let browser;

  before(async () => {
    plain = await startGyre();
    browser = await launch();
    if (skip) return;
    if (missing) throw new Error(missing);
    redis = await startRedis();
    // The group starts at the stream's first entry: entries added before
    // the consumer made it would otherwise be passed over.
    await redisCli(redis.addr, /^OK$/, 'XGROUP', 'CREATE', STREAM, GROUP, '0', 'MKSTREAM');
    const nobody = `127.0.0.1:${await freePort()}`;
    const stream = (address) => ({ address: [address], streams: [STREAM], consumer_group: GROUP });
    node = await startGyre({
      extra: {
        consumers: [
          { name: 'feed', enabled: true, type: 'redis_stream', redis_stream: stream(redis.addr) },
          { name: 'offline', enabled: true, type: 'redis_stream', redis_stream: stream(nobody) },
        ],
      },
    });
  });

  after(async () => {
    await browser?.close();
    await node?.stop();
    await plain?.stop();
    await redis?.stop();
  });

  test('a node with consumers shows each one, and the table follows them', { skip }, async () => {
    // Two publishes run; an entry that is no command is skipped.
    await produce(redis.addr, [publish(1), 'not a command', publish(2)]);
    const page = await newPage(browser);
    await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'light' }]);
    await openApp(page, node);
    const table = await waitForText(page, 'table', 'Consumers', (t) => t.includes('feed') && t.includes('offline'));
    assert.match(table, /Processed/);
    assert.match(await waitForText(page, 'region', 'Consumers', NODE_NAME), /Every node reports its own/);

    // The lag is read every second: wait for the one after the entries ran.
    const feed = await waitForRow(page, 'feed', (r) => r[3] === '2' && r[7] === '0');
    assert.equal(feed[1], 'redis_stream');
    assert.equal(feed[2], 'Running');
    assert.deepEqual(feed.slice(4, 7), ['1', '0', '0'], 'skipped, retries, source errors');
    assert.notEqual(feed[8], 'never');
    assert.match(feed[9], /107 bad request/, 'the skipped entry is the last error');

    const offline = await waitForRow(page, 'offline', (r) => num(r[6]) >= 1);
    assert.equal(offline[1], 'redis_stream');
    assert.equal(offline[2], 'Source down');
    assert.equal(offline[3], '0');
    assert.equal(offline[7], '–', 'a source never reached has no lag');
    assert.equal(offline[8], 'never');
    assert.match(offline[9], /connection refused/);
    const offlineErrors = num(offline[6]);

    // More entries: the open page shows them without a reload.
    await produce(redis.addr, [publish(3), publish(4), publish(5)]);
    await waitForRow(page, 'feed', (r) => r[3] === '5');
    const history = await node.api('history', { channel: CHANNEL, limit: 10 });
    assert.deepEqual(history.publications.map((p) => p.data.n), [1, 2, 3, 4, 5]);

    // Readable in both colour schemes (the scheme is set before a page
    // loads: switching a loaded page catches colours mid-transition), and
    // no sideways scroll on a phone.
    const dark = await newPage(browser);
    await dark.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'dark' }]);
    await openApp(dark, node);
    await waitForText(dark, 'table', 'Consumers', 'Source down');
    for (const [scheme, p] of [['light', page], ['dark', dark]]) {
      const problems = await p.evaluate(contrastProblems);
      assert.deepEqual(problems, [], `${scheme} scheme:\n${problems.join('\n')}`);
    }
    const narrow = await newPage(browser, { width: 360, height: 740 });
    await openApp(narrow, node);
    await waitForText(narrow, 'table', 'Consumers', 'offline');
    assert.equal(await horizontalOverflow(narrow), 0);

    // The unreachable source is still tried, and each failure counted.
    await waitForRow(page, 'offline', (r) => num(r[6]) > offlineErrors && r[2] === 'Source down');
    assert.deepEqual(page.problems, []);
  });

  test('a node without consumers shows no Consumers table', async () => {
    const page = await newPage(browser);
    await openApp(page, plain);
    // The page asks for the nodes and the consumers together: once the
    // nodes show, the consumers' answer (none) is in.
    await waitForText(page, 'table', 'Nodes', NODE_NAME);
    assert.equal(await page.$(aria('table', 'Consumers')), null);
    assert.equal(await page.$(aria('heading', 'Consumers')), null);
    assert.deepEqual(page.problems, []);
  });
});
