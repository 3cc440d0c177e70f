// Failover between two gyre processes: when A shuts down on SIGTERM, its
// clients see 3001 "shutdown", reconnect by themselves, and land on B.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';

import { builds, newClient, newSub, connected, subscribed, closeAll, uniqueChannel } from '../lib/sdk.js';
import { startServer } from '../lib/server.js';

// rotatingWebSocket makes a class for the SDK's `websocket` option that opens
// each new connection to the next of urls in turn, whatever endpoint the SDK
// passes. This is how centrifuge-js moves between servers on reconnect: an
// array of transport endpoints only falls back before the first successful
// connection, then sticks to the one that worked.
function rotatingWebSocket(urls) {
  const dialed = [];
  class Rotating extends WebSocket {
    constructor(_endpoint, protocols) {
      const url = urls[dialed.length % urls.length];
      dialed.push(url);
      super(url, protocols);
    }
  }
  Rotating.dialed = dialed;
  return Rotating;
}

for (const build of builds) {
  describe(`failover on SIGTERM (${build.name} build)`, () => {
    it('sees 3001 shutdown from A and reconnects to B by itself', async (t) => {
      const a = await startServer();
      const b = await startServer();
      const Rotating = rotatingWebSocket([a.wsUrl, b.wsUrl]);
      const user = uniqueChannel('failover-');
      const c = newClient(build, a, { user, websocket: Rotating });
      t.after(async () => {
        closeAll([c]);
        await a.stop();
        await b.stop();
      });

      const onA = await connected(c);
      const ch = uniqueChannel('chat:fo-');
      const sub = newSub(c, ch);
      await subscribed(sub);
      const [nodeA] = (await a.api('info', {})).nodes;
      assert.equal(nodeA.num_clients, 1, `A before SIGTERM: ${JSON.stringify(nodeA)}`);

      const since = c.rec.mark();
      const subSince = sub.rec.mark();
      await a.stop(); // SIGTERM, and wait for the process to exit

      const closing = await c.rec.waitFor('connecting', { since, what: 'connecting after SIGTERM of A' });
      assert.deepEqual([closing.code, closing.reason], [3001, 'shutdown']);
      const onB = await c.rec.waitFor('connected', { since, what: 'connected to B' });
      await sub.rec.waitFor('subscribed', { since: subSince, what: `resubscribed to ${ch}` });
      assert.deepEqual(Rotating.dialed, [a.wsUrl, b.wsUrl], 'one connection to each server, A first');
      assert.notEqual(onB.client, onA.client, 'a new connection');
      assert.deepEqual(c.rec.all('disconnected', since), [], 'the client never gave up');

      const [nodeB] = (await b.api('info', {})).nodes;
      assert.deepEqual([nodeB.num_clients, nodeB.num_users], [1, 1], `B after failover: ${JSON.stringify(nodeB)}`);
      const { presence } = await b.api('presence', { channel: ch });
      assert.deepEqual(Object.keys(presence), [onB.client], `presence on B: ${JSON.stringify(presence)}`);
      assert.equal(presence[onB.client].user, user);

      const res = await b.publish(ch, { after: 'failover' });
      const pub = await sub.rec.waitFor('publication', { since: subSince, what: 'publication from B' });
      assert.deepEqual([build.decode(pub.data), pub.offset], [{ after: 'failover' }, res.offset]);
    });
  });
}
