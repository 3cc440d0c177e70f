// The Status page's Consumers table: shown for a node that runs consumers,
// with each one's state and counters, refreshed as they move; absent for a
// node without consumers.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { startGyre, NODE_NAME } from '../lib/gyre.js';
import { startConsumerStub, STUB_NODE } from '../lib/consumerstub.js';
import { contrastProblems } from '../lib/contrast.js';
import { launch, newPage, aria, openApp, waitForText, horizontalOverflow } from '../lib/browser.js';

const publish = (n) => JSON.stringify({ method: 'publish', payload: { channel: 'consumed', data: { n } } });

// rowText is the text of the table row whose header cell is name.
async function rowText(page, name) {
  return page.$$eval(`${aria('table', 'Consumers')} tbody tr`, (rows, want) => {
    const row = rows.find((r) => r.querySelector('th')?.textContent === want);
    return row ? [...row.cells].map((c) => c.innerText.trim()).join(' | ') : '';
  }, name);
}

async function waitForRow(page, name, want) {
  const deadline = Date.now() + 15000;
  let last = '';
  for (;;) {
    last = await rowText(page, name);
    if (want(last)) return last;
    if (Date.now() > deadline) throw new Error(`consumer ${name} never showed what was wanted; its row: ${last}\n${page.problems.join('\n')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('consumers on the Status page', () => {
  let stub;
  let plain;
  let browser;

  before(async () => {
    stub = await startConsumerStub();
    plain = await startGyre();
    browser = await launch();
  });

  after(async () => {
    await browser?.close();
    await stub?.stop();
    await plain?.stop();
  });

  test('a node with consumers shows each one, and the table follows them', async () => {
    // Two publishes run; a line that is no command is skipped.
    await stub.produce([publish(1), 'not a command', publish(2)]);
    const page = await newPage(browser);
    await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'light' }]);
    await openApp(page, stub);
    const table = await waitForText(page, 'table', 'Consumers', (t) => t.includes('feed') && t.includes('outbox'));
    assert.match(table, /Processed/);
    assert.match(await waitForText(page, 'region', 'Consumers', STUB_NODE), /Every node reports its own/);

    // Columns: name | type | state | processed | skipped | retries | source errors | lag | last processed | last error
    const feed = (await waitForRow(page, 'feed', (r) => r.split(' | ')[3] === '2')).split(' | ');
    assert.equal(feed[1], 'redis_stream');
    assert.equal(feed[2], 'Running');
    assert.deepEqual(feed.slice(4, 8), ['1', '0', '0', '0']);
    assert.notEqual(feed[8], 'never');
    assert.match(feed[9], /107 bad request/, "the skipped line is the last error");

    const outbox = (await rowText(page, 'outbox')).split(' | ');
    assert.equal(outbox[1], 'postgresql');
    assert.equal(outbox[2], 'Source down');
    assert.ok(Number(outbox[6].replace(/,/g, '')) >= 1, `source errors: ${outbox[6]}`);
    assert.equal(outbox[7], '–', 'a source that cannot tell has no lag');
    assert.equal(outbox[8], 'never');
    assert.match(outbox[9], /connection refused/);

    // More messages: the open page shows them without a reload.
    await stub.produce([publish(3), publish(4), publish(5)]);
    await waitForRow(page, 'feed', (r) => r.split(' | ')[3] === '5');

    // Readable in both colour schemes (the scheme is set before a page
    // loads: switching a loaded page catches colours mid-transition), and
    // no sideways scroll on a phone.
    const dark = await newPage(browser);
    await dark.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'dark' }]);
    await openApp(dark, stub);
    await waitForText(dark, 'table', 'Consumers', 'Source down');
    for (const [scheme, p] of [['light', page], ['dark', dark]]) {
      const problems = await p.evaluate(contrastProblems);
      assert.deepEqual(problems, [], `${scheme} scheme:\n${problems.join('\n')}`);
    }
    const narrow = await newPage(browser, { width: 360, height: 740 });
    await openApp(narrow, stub);
    await waitForText(narrow, 'table', 'Consumers', 'outbox');
    assert.equal(await horizontalOverflow(narrow), 0);
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
