// The chat example's page (examples/chat) in Chromium, with the real
// centrifuge-js this directory installs: joining replaces the Join form by
// the room, which says who you are; Leave brings the form back.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

import { freePort } from '../../sdk/js/lib/server.js';
import { launch, newPage, waitForTextAt, WAIT_MS } from '../lib/browser.js';

const here = dirname(fileURLToPath(import.meta.url));
const exampleDir = resolve(here, '../../../examples/chat');
const centrifugeJS = resolve(here, '../node_modules/centrifuge/dist/centrifuge.js');

let work;
let chat;
let base;
let browser;

// waitForPage polls the example until it serves its page.
async function waitForPage(url) {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    try {
      if ((await fetch(url)).ok) return;
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) throw new Error(`${url} not served within ${WAIT_MS} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'gyre-chat-example-'));
  const bin = join(work, 'chat');
  execFileSync('go', ['build', '-o', bin, '.'], { cwd: exampleDir, stdio: 'inherit' });
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  chat = spawn(bin, ['-addr', `127.0.0.1:${port}`, '-js', centrifugeJS], { stdio: 'ignore' });
  await waitForPage(`${base}/`);
  browser = await launch();
});

after(async () => {
  await browser?.close();
  chat?.kill('SIGTERM');
  if (work) rmSync(work, { recursive: true, force: true });
});

// joinAs types a name and presses Join, and waits until the form is gone.
async function joinAs(page, name) {
  await page.locator('#join input[name=name]').fill(name);
  await page.click('#join button');
  await page.waitForSelector('#join', { hidden: true });
  await page.waitForSelector('#room', { visible: true });
}

// say sends a message and waits until the log shows it.
async function say(page, name, message) {
  await page.type('#say input[name=text]', message);
  await page.keyboard.press('Enter');
  return waitForTextAt(page, '#log', 'the log', `${name}: ${message}`);
}

test('joining hides the Join form and shows who you are; Leave brings it back', async () => {
  const page = await newPage(browser);
  await page.goto(`${base}/`);
  await joinAs(page, 'ann');
  assert.equal(await page.$eval('#me', (el) => el.innerText), 'ann');
  await waitForTextAt(page, '#who', 'the presence line', 'Here: ann');
  await say(page, 'ann', 'hello');

  await page.click('#leave');
  await page.waitForSelector('#room', { hidden: true });
  await page.waitForSelector('#join', { visible: true });

  // Joining again under another name: one publication per message, with
  // the room's history above it.
  await joinAs(page, 'bob');
  assert.equal(await page.$eval('#me', (el) => el.innerText), 'bob');
  await say(page, 'bob', 'again');
  // A message published twice would show twice before the next one.
  const log = await say(page, 'bob', 'done');
  assert.equal(log.split('\n').filter((l) => l === 'bob: again').length, 1, log);
  assert.ok(log.includes('ann: hello'), log);
  assert.deepEqual(page.problems, []);
});
