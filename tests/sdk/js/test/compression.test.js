// WebSocket compression (permessage-deflate) with Node's ws and the
// centrifuge npm package on top of it, on the memory engine and on Redis:
// what is negotiated, that every publication of a fan-out arrives in order
// and intact at compressed and plain subscribers of one channel alike, and,
// read off the wire by a tap between client and server, that large messages
// really travelled compressed, each inflating on its own, and small ones plain.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';

import { signToken } from '../lib/server.js';
import { engines, engineSkip, startNodes } from '../lib/engines.js';
import { startWireTap } from '../lib/wiretap.js';
import { EXTENSION, checkWire, compressionConfig, isBig, publications } from '../lib/compression.js';
import { builds, newClient, newSub, connected, subscribed, closeAll, uniqueChannel, WAIT_MS } from '../lib/sdk.js';

// socketClass is ws with permessage-deflate offered (ws's default) or not,
// keeping each socket made so that the test can read what it negotiated.
function socketClass(sockets, perMessageDeflate) {
  return class extends WebSocket {
    constructor(url, protocols) {
      super(url, protocols, { perMessageDeflate });
      sockets.push(this);
    }
  };
}

// opened resolves with the Sec-WebSocket-Extensions header ws saw once it is
// open.
function opened(ws) {
  let header = '';
  ws.on('upgrade', (res) => { header = res.headers['sec-websocket-extensions'] ?? ''; });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(header));
    ws.once('error', reject);
  });
}

// MessageQueue hands out a ws's messages in arrival order.
class MessageQueue {
  constructor(ws) {
    this.items = [];
    this.waiters = [];
    ws.on('message', (data) => {
      const w = this.waiters.shift();
      if (w) w(data);
      else this.items.push(data);
    });
  }

  next(what) {
    if (this.items.length > 0) return Promise.resolve(this.items.shift());
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${what} within ${WAIT_MS} ms`)), WAIT_MS);
      this.waiters.push((d) => {
        clearTimeout(timer);
        resolve(d);
      });
    });
  }
}

for (const engine of engines) {
  describe(`compression on the ${engine} engine`, { skip: engineSkip(engine) }, () => {
    let nodes = null;
    const taps = [];

    before(async () => {
      nodes = await startNodes(engine, compressionConfig);
    });

    after(async () => {
      for (const tap of taps) await tap.close();
      if (nodes) await nodes.stop();
    });

    const tap = async () => {
      const t = await startWireTap(nodes.sub.port);
      taps.push(t);
      return t;
    };

    it('ws negotiates permessage-deflate without context takeover; a client that does not offer it gets none', async (t) => {
      // An offer naming server_max_window_bits=15 is accepted by echoing
      // it, as RFC 7692 asks.
      const offers = {
        default: [true, EXTENSION],
        'no context takeover asked': [{ serverNoContextTakeover: true, clientNoContextTakeover: true }, EXTENSION],
        'window bits asked': [{ serverMaxWindowBits: 15, clientMaxWindowBits: 15 }, `${EXTENSION}; server_max_window_bits=15`],
      };
      for (const [name, [perMessageDeflate, answer]] of Object.entries(offers)) {
        const ws = new WebSocket(nodes.sub.wsUrl, { perMessageDeflate });
        t.after(() => ws.terminate());
        const header = await opened(ws);
        assert.equal(header, answer, `offer "${name}": extension answered`);
        assert.equal(ws.extensions, 'permessage-deflate', `offer "${name}": ws.extensions`);
      }
      const plain = new WebSocket(nodes.sub.wsUrl, { perMessageDeflate: false });
      t.after(() => plain.terminate());
      assert.equal(await opened(plain), '', 'no offer, no extension');
      assert.equal(plain.extensions, '');
    });

    it('centrifuge-js subscribers of both builds, compressed and plain, receive every publication, from the API and from compressed clients, in order and intact', async (t) => {
      const ch = uniqueChannel('chat:deflate-');
      const subscribers = [];
      for (const build of builds) {
        for (const deflate of [true, false]) {
          const sockets = [];
          const wt = await tap();
          const c = newClient(build, nodes.sub, { url: wt.wsUrl, websocket: socketClass(sockets, deflate) });
          t.after(() => closeAll([c]));
          await connected(c);
          const sub = newSub(c, ch);
          await subscribed(sub);
          subscribers.push({ what: `${build.name} build, ${deflate ? 'deflate' : 'plain'}`, build, deflate, sockets, wt, sub });
        }
      }

      const sent = publications();
      for (const [i, data] of sent.entries()) {
        const res = await nodes.pub.publish(ch, data);
        assert.equal(res.offset, i + 1, `publish result: ${JSON.stringify(res)}`);
      }

      for (const s of subscribers) {
        const pubs = await s.sub.rec.waitCount('publication', sent.length);
        assert.deepEqual(
          pubs.map((p) => p.offset),
          sent.map((_, i) => i + 1),
          `${s.what}: offsets in arrival order`,
        );
        for (const [i, p] of pubs.entries()) {
          assert.deepEqual(s.build.decode(p.data), sent[i], `${s.what}: publication ${i + 1}`);
        }
        assert.equal(s.sockets.length, 1, `${s.what}: one WebSocket, no reconnect`);
        assert.equal(s.sockets[0].extensions, s.deflate ? 'permessage-deflate' : '', `${s.what}: ws.extensions`);
        assert.equal(s.wt.conns.length, 1, `${s.what}: connections through the tap`);
        const { wire, plain } = checkWire(s.wt.conns[0], sent, { deflate: s.deflate, what: s.what });
        if (s.deflate) assert.ok(wire * 3 <= plain, `${s.what}: large publications took ${wire} bytes on the wire for ${plain}`);
      }

      // Each compressed client publishes a large payload itself: ws deflates
      // messages over 1 KB, so the server must inflate the command, and every
      // subscriber, compressed or not, gets the publication.
      const own = [];
      for (const s of subscribers.filter((x) => x.deflate)) {
        const data = { ...publications()[0], from: s.what };
        own.push(data);
        await s.sub.publish(s.build.encode(data));
        const cmd = s.wt.conns[0].fromClient.messages.find((m) => m.data.includes(`"from":"${s.what}"`));
        assert.ok(cmd, `${s.what}: its publish command is not on the wire`);
        assert.equal(cmd.error, null, `${s.what}: its publish command did not inflate on its own`);
        assert.ok(cmd.compressed, `${s.what}: ws sent its publish command (${cmd.data.length} bytes) uncompressed`);
      }
      for (const s of subscribers) {
        const pubs = (await s.sub.rec.waitCount('publication', sent.length + own.length)).slice(sent.length);
        assert.deepEqual(pubs.map((p) => s.build.decode(p.data)), own, `${s.what}: the clients' own publications`);
      }
    });

    it('a uni_websocket client with compression receives every publication in order and intact', async (t) => {
      const wt = await tap();
      const ch = uniqueChannel('chat:uni-deflate-');
      const ws = new WebSocket(wt.uniWsUrl);
      t.after(() => ws.terminate());
      const q = new MessageQueue(ws);
      assert.equal(await opened(ws), EXTENSION);
      ws.send(JSON.stringify({ token: signToken({ sub: 'uni-deflate', channels: [ch] }) }));
      const first = JSON.parse(String(await q.next('connect push')));
      assert.ok(ch in (first.connect?.subs ?? {}), `connect push: ${JSON.stringify(first)}`);

      const sent = publications();
      for (const data of sent) await nodes.pub.publish(ch, data);
      const got = [];
      while (got.length < sent.length) {
        const push = JSON.parse(String(await q.next(`publication ${got.length + 1}`)));
        if (Object.keys(push).length === 0) continue; // a ping
        assert.equal(push.channel, ch, `push: ${JSON.stringify(push)}`);
        if (push.join) continue; // its own join: "chat" pushes join and leave
        got.push(push.pub);
      }
      assert.deepEqual(got.map((p) => p.offset), sent.map((_, i) => i + 1), 'offsets in arrival order');
      assert.deepEqual(got.map((p) => p.data), sent);

      const conn = wt.conns[0];
      const { wire, plain } = checkWire(conn, sent, { deflate: true, what: 'uni_websocket' });
      assert.ok(wire * 3 <= plain, `large publications took ${wire} bytes on the wire for ${plain}`);
      // One push per message: the tap finds each publication alone in its own.
      for (const p of sent.filter(isBig)) {
        const carrying = conn.messages.filter((m) => m.data.includes(p.marker));
        assert.equal(carrying.length, 1, `${p.marker} is in ${carrying.length} messages`);
        assert.equal(JSON.parse(carrying[0].data).pub.data.marker, p.marker);
      }
    });
  });
}
