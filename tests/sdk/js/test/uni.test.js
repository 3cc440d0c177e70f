// The unidirectional transports with the browser's own tools, no SDK: fetch for
// uni_http_stream, EventSource for uni_sse, a WebSocket for uni_websocket.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { EventSource } from 'eventsource';
import WebSocket from 'ws';

import { baseConfig, signToken } from '../lib/server.js';
import { useServer, uniqueChannel, WAIT_MS } from '../lib/sdk.js';

const server = useServer({
  config: (port) => ({
    ...baseConfig(port),
    uni_http_stream: { enabled: true },
    uni_sse: { enabled: true },
    uni_websocket: { enabled: true },
  }),
});

// PushQueue hands out pushes in arrival order; next() waits for one.
class PushQueue {
  constructor() {
    this.items = [];
    this.waiters = [];
  }

  put(raw) {
    const push = JSON.parse(raw);
    const w = this.waiters.shift();
    if (w) w(push);
    else this.items.push(push);
  }

  next(what = 'push') {
    if (this.items.length > 0) return Promise.resolve(this.items.shift());
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${what} within ${WAIT_MS} ms`)), WAIT_MS);
      this.waiters.push((p) => {
        clearTimeout(timer);
        resolve(p);
      });
    });
  }

  // nextNonPing skips the server's {} pings.
  async nextNonPing(what) {
    for (;;) {
      const p = await this.next(what);
      if (Object.keys(p).length > 0) return p;
    }
  }
}

// Each opener connects with the ConnectRequest and returns the push queue and
// a close function.
const openers = {
  async uni_http_stream(connect) {
    const q = new PushQueue();
    const abort = new AbortController();
    const resp = await fetch(`${server().httpUrl}/connection/uni_http_stream`, {
      method: 'POST',
      body: JSON.stringify(connect),
      signal: abort.signal,
    });
    assert.equal(resp.status, 200);
    (async () => {
      const decoder = new TextDecoder();
      let buf = '';
      try {
        for await (const chunk of resp.body) {
          buf += decoder.decode(chunk, { stream: true });
          let i;
          while ((i = buf.indexOf('\n')) >= 0) {
            q.put(buf.slice(0, i));
            buf = buf.slice(i + 1);
          }
        }
      } catch { /* aborted */ }
    })();
    return { q, close: () => abort.abort() };
  },

  async uni_sse(connect) {
    const q = new PushQueue();
    const url = `${server().httpUrl}/connection/uni_sse?cf_connect=${encodeURIComponent(JSON.stringify(connect))}`;
    const es = new EventSource(url);
    es.onmessage = (e) => q.put(e.data);
    // A closed stream would make the EventSource reconnect: the tests stop it.
    es.onerror = () => es.close();
    return { q, close: () => es.close() };
  },

  async uni_websocket(connect) {
    const q = new PushQueue();
    const ws = new WebSocket(server().wsUrl.replace('/connection/websocket', '/connection/uni_websocket'));
    const closed = new Promise((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: String(reason) })));
    ws.on('message', (data) => q.put(String(data)));
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    ws.send(JSON.stringify(connect));
    return { q, close: () => ws.close(), closed };
  },
};

for (const [name, open] of Object.entries(openers)) {
  describe(name, () => {
    it('sends the connect push, publications of server-side channels, then the disconnect', async (t) => {
      const ch = uniqueChannel('news-');
      const user = `uni-${name}`;
      const { q, close, closed } = await open({ token: signToken({ sub: user, channels: [ch] }) });
      t.after(close);

      const first = await q.next('connect push');
      assert.ok(first.connect?.client, `first push: ${JSON.stringify(first)}`);
      assert.equal(first.connect.ping, 25);
      assert.ok(!first.connect.pong, 'a unidirectional client is not asked for pongs');
      assert.ok(ch in (first.connect.subs ?? {}), `subs: ${JSON.stringify(first.connect.subs)}`);

      await server().publish(ch, { text: 'hello' });
      const pub = await q.nextNonPing('publication');
      assert.deepEqual(pub, { channel: ch, pub: pub.pub }, `bare push expected: ${JSON.stringify(pub)}`);
      assert.deepEqual(pub.pub.data, { text: 'hello' });

      await server().api('disconnect', { user, disconnect: { code: 4503, reason: 'bye' } });
      const d = await q.nextNonPing('disconnect push');
      assert.deepEqual(d.disconnect, { code: 4503, reason: 'bye' });
      if (closed) assert.equal((await closed).code, 4503);
    });
  });
}
