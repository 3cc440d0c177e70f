// WebSocket compression (permessage-deflate) in Chromium, on the memory engine
// and on Redis: the browser's own WebSocket, driven by hand-written protocol
// commands and by the centrifuge browser builds (JSON and protobuf), receives a
// fan-out's publications in order and intact, and a tap between browser and
// server reads off the wire that the large ones travelled compressed (each
// inflating on its own) and the small ones plain, and that the browser's own
// commands went compressed too. The DevTools protocol shows frames only
// inflated (Network.webSocketFrameReceived has no RSV1 and no wire size), so
// the tap is what sees the wire.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';

import { signToken } from '../lib/gyre.js';
import { launch, newPage, WAIT_MS } from '../lib/browser.js';
import { engines, engineSkip, startNodes } from '../../sdk/js/lib/engines.js';
import { startWireTap } from '../../sdk/js/lib/wiretap.js';
import { EXTENSION, checkWire, compressionConfig, publications } from '../../sdk/js/lib/compression.js';

// The browser builds of the centrifuge package (the package exports only its
// Node entry points, so they are found by path).
const dist = (name) => fileURLToPath(new URL(`../node_modules/centrifuge/dist/${name}`, import.meta.url));
const builds = {
  json: dist('centrifuge.js'),
  protobuf: dist('centrifuge.protobuf.js'),
};

let seq = 0;
function uniqueChannel(prefix) {
  seq += 1;
  return `${prefix}${process.pid}-${seq}-${Math.random().toString(36).slice(2, 8)}`;
}

// publishAll publishes sent in order and checks the offsets it is given.
async function publishAll(node, ch, sent) {
  for (const [i, data] of sent.entries()) {
    const res = await node.publish(ch, data);
    assert.equal(res.offset, i + 1, `publish result: ${JSON.stringify(res)}`);
  }
}

// openRaw opens a WebSocket in the page and runs the client protocol by hand
// (JSON): connect, then subscribe to ch. The page keeps every push in
// window.gyre.pushes and answers the server's pings. It resolves with the
// socket's extensions and the two replies.
function openRaw(page, url, token, ch, timeoutMs) {
  return page.evaluate(async (url, token, ch, timeoutMs) => {
    const ws = new WebSocket(url);
    const replies = new Map();
    const gyre = { ws, pushes: [], wake: () => {} };
    window.gyre = gyre;
    ws.onmessage = (e) => {
      for (const line of String(e.data).split('\n')) {
        if (!line) continue;
        const reply = JSON.parse(line);
        if (reply.id) replies.set(reply.id, reply);
        else if (reply.push) gyre.pushes.push(reply.push);
        else ws.send('{}'); // a ping
      }
      gyre.wake();
    };
    await new Promise((resolve, reject) => {
      ws.onopen = resolve;
      ws.onerror = () => reject(new Error(`WebSocket to ${url} failed`));
    });
    const call = (id, command) => {
      ws.send(JSON.stringify({ id, ...command }));
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no reply to command ${id}`)), timeoutMs);
        gyre.wake = () => {
          if (!replies.has(id)) return;
          clearTimeout(timer);
          resolve(replies.get(id));
        };
        gyre.wake();
      });
    };
    const connect = await call(1, { connect: { token } });
    const subscribe = await call(2, { subscribe: { channel: ch } });
    return { extensions: ws.extensions, connect, subscribe };
  }, url, token, ch, timeoutMs);
}

// openSdk loads a centrifuge browser build into the page and subscribes to
// ch with it on Chromium's WebSocket, keeping every socket it opens (to read
// its extensions) and every publication, its data decoded from JSON.
async function openSdk(page, build, url, token, ch, timeoutMs) {
  await page.addScriptTag({ path: builds[build] });
  return page.evaluate(async (url, token, ch, protobuf, timeoutMs) => {
    const gyre = { sockets: [], pubs: [] };
    window.gyre = gyre;
    const Native = window.WebSocket;
    const websocket = class extends Native {
      constructor(...args) {
        super(...args);
        gyre.sockets.push(this);
      }
    };
    const c = new window.Centrifuge(url, { token, websocket, timeout: timeoutMs });
    gyre.client = c;
    const decoder = new TextDecoder();
    const sub = c.newSubscription(ch);
    sub.on('publication', (ctx) => {
      gyre.pubs.push({ offset: ctx.offset, data: protobuf ? JSON.parse(decoder.decode(ctx.data)) : ctx.data });
    });
    const within = (what, p) => Promise.race([
      p,
      new Promise((_, reject) => setTimeout(() => reject(new Error(`not ${what} within ${timeoutMs} ms`)), timeoutMs)),
    ]);
    const subscribed = new Promise((resolve, reject) => {
      sub.on('subscribed', resolve);
      sub.on('unsubscribed', (ctx) => reject(new Error(`unsubscribed: ${JSON.stringify(ctx)}`)));
    });
    c.connect();
    sub.subscribe();
    await within('subscribed', subscribed);
    return { sockets: gyre.sockets.length, extensions: gyre.sockets[0]?.extensions };
  }, url, token, ch, build === 'protobuf', timeoutMs);
}

let browser = null;

before(async () => {
  browser = await launch();
});

after(async () => {
  await browser?.close();
});

for (const engine of engines) {
  describe(`compression in Chromium on the ${engine} engine`, { skip: engineSkip(engine) }, () => {
    let nodes = null;
    const taps = [];

    before(async () => {
      nodes = await startNodes(engine, compressionConfig);
    });

    after(async () => {
      for (const tap of taps) await tap.close();
      await nodes?.stop();
    });

    const tap = async () => {
      const t = await startWireTap(nodes.sub.port);
      taps.push(t);
      return t;
    };

    it('a native WebSocket negotiates permessage-deflate and receives compressed publications by hand-written commands', async () => {
      const wt = await tap();
      const page = await newPage(browser);
      const ch = uniqueChannel('chat:chromium-');
      const opened = await openRaw(page, wt.wsUrl, signToken({ sub: 'chromium' }), ch, WAIT_MS);
      assert.equal(opened.extensions, EXTENSION, 'socket.extensions');
      assert.ok(opened.connect.connect?.client, `connect reply: ${JSON.stringify(opened.connect)}`);
      assert.ok(opened.subscribe.subscribe, `subscribe reply: ${JSON.stringify(opened.subscribe)}`);

      const sent = publications();
      await publishAll(nodes.pub, ch, sent);
      await page.waitForFunction((n) => window.gyre.pushes.filter((p) => p.pub).length >= n, { timeout: WAIT_MS }, sent.length);
      const pubs = await page.evaluate(() => window.gyre.pushes.filter((p) => p.pub).map((p) => ({ channel: p.channel, ...p.pub })));
      assert.deepEqual(pubs.map((p) => p.channel), sent.map(() => ch));
      assert.deepEqual(pubs.map((p) => p.offset), sent.map((_, i) => i + 1), 'offsets in arrival order');
      assert.deepEqual(pubs.map((p) => p.data), sent);

      assert.equal(wt.conns.length, 1);
      // Chromium deflates every message it sends once the extension is on:
      // the server read the connect and subscribe commands compressed, each
      // standing alone (client_no_context_takeover).
      const commands = wt.conns[0].fromClient.messages;
      assert.ok(commands.length >= 2, `commands on the wire: ${commands.length}`);
      for (const [i, m] of commands.slice(0, 2).entries()) {
        assert.ok(m.compressed, `command ${i + 1} went uncompressed`);
        assert.equal(m.error, null, `command ${i + 1} does not inflate on its own`);
        assert.equal(JSON.parse(m.data).id, i + 1);
      }
      const { wire, plain } = checkWire(wt.conns[0], sent, { deflate: true, what: 'Chromium WebSocket' });
      assert.ok(wire * 3 <= plain, `large publications took ${wire} bytes on the wire for ${plain}`);
      assert.deepEqual(page.problems, []);
    });

    for (const build of Object.keys(builds)) {
      it(`the centrifuge ${build} browser build receives compressed fan-out in order and intact`, async () => {
        const wt = await tap();
        const page = await newPage(browser);
        const ch = uniqueChannel('chat:chromium-sdk-');
        const opened = await openSdk(page, build, wt.wsUrl, signToken({ sub: `chromium-${build}` }), ch, WAIT_MS);
        assert.deepEqual(opened, { sockets: 1, extensions: EXTENSION });

        const sent = publications();
        await publishAll(nodes.pub, ch, sent);
        await page.waitForFunction((n) => window.gyre.pubs.length >= n, { timeout: WAIT_MS }, sent.length);
        const pubs = await page.evaluate(() => {
          window.gyre.client.disconnect();
          return window.gyre.pubs;
        });
        assert.deepEqual(pubs.map((p) => p.offset), sent.map((_, i) => i + 1), 'offsets in arrival order');
        assert.deepEqual(pubs.map((p) => p.data), sent);

        assert.equal(wt.conns.length, 1, 'one connection, no reconnect');
        const { wire, plain } = checkWire(wt.conns[0], sent, { deflate: true, what: `centrifuge ${build} build in Chromium` });
        assert.ok(wire * 3 <= plain, `large publications took ${wire} bytes on the wire for ${plain}`);
        assert.deepEqual(page.problems, []);
      });
    }
  });
}
