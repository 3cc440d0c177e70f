import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';

import { baseConfig } from '../lib/server.js';
import { builds, newClient, newSub, connected, subscribed, closeAll, useServer, uniqueChannel } from '../lib/sdk.js';

// "compact" allows channel compaction, which centrifuge-js 5.8 offers on
// every subscribe (subscribe flag 1).
const server = useServer({
  config: (port) => {
    const cfg = baseConfig(port);
    cfg.channel.namespaces.push({
      name: 'compact',
      join_leave: true,
      force_push_join_leave: true,
      history_size: 10,
      history_ttl: '300s',
      force_recovery: true,
      allow_subscribe_for_client: true,
      allow_channel_compaction: true,
    });
    return cfg;
  },
});

// spyingSocket is ws that keeps every frame the server sends, so that a test
// can see what travelled on the wire under the SDK.
function spyingSocket(frames) {
  return class extends WebSocket {
    constructor(...args) {
      super(...args);
      this.on('message', (data) => frames.push(Buffer.from(data)));
    }
  };
}

// compactedPushes counts, in JSON frames, pushes that carry a channel number
// and no channel name.
function compactedPushes(frames) {
  let n = 0;
  for (const frame of frames) {
    for (const line of frame.toString('utf8').split('\n')) {
      let msg;
      try { msg = JSON.parse(line); } catch { continue; }
      if (msg.push && msg.push.id > 0 && msg.push.channel === undefined) n++;
    }
  }
  return n;
}

for (const build of builds) {
  describe(`channel compaction (${build.name} build)`, () => {
    it('delivers publications, joins and leaves that carry a channel number to the right subscription', async (t) => {
      const frames = [];
      const alice = newClient(build, server(), { user: 'alice', websocket: spyingSocket(frames) });
      const bob = newClient(build, server(), { user: 'bob' });
      t.after(() => closeAll([alice, bob]));
      await connected(alice);
      await connected(bob);

      const ch = uniqueChannel('compact:a-');
      const other = uniqueChannel('compact:b-');
      const subA = newSub(alice, ch);
      await subscribed(subA);
      const subOther = newSub(alice, other);
      await subscribed(subOther);
      const subB = newSub(bob, ch);
      await subscribed(subB);
      const join = await subA.rec.waitFor('join', { match: (j) => j.info?.user === 'bob', what: 'join of bob' });
      assert.equal(join.channel, ch);

      await server().publish(ch, { n: 1 });
      await server().publish(other, { n: 2 });
      const pub = await subA.rec.waitFor('publication');
      assert.equal(pub.channel, ch);
      assert.deepEqual(build.decode(pub.data), { n: 1 });
      const pubOther = await subOther.rec.waitFor('publication');
      assert.equal(pubOther.channel, other);
      assert.deepEqual(build.decode(pubOther.data), { n: 2 });

      subB.unsubscribe();
      const leave = await subA.rec.waitFor('leave', { match: (l) => l.info?.user === 'bob', what: 'leave of bob' });
      assert.equal(leave.channel, ch);
      assert.equal(subA.rec.entries.filter((e) => e.name === 'publication').length, 1);
      assert.equal(subOther.rec.entries.filter((e) => e.name === 'publication').length, 1);

      if (build.name === 'json') {
        // Alice's join, bob's join and leave, two publications: all compacted.
        assert.ok(compactedPushes(frames) >= 5, `compacted pushes on the wire: ${compactedPushes(frames)}`);
      }
    });
  });
}
