import { describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { baseConfig } from '../lib/server.js';
import { builds, newClient, newSub, connected, subscribed, closeAll, useServer, uniqueChannel, spyingSocket, jsonPushes } from '../lib/sdk.js';

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

// compactedPushes counts, in JSON frames, pushes that carry a channel number
// and no channel name.
function compactedPushes(frames) {
  return jsonPushes(frames).filter((p) => p.id > 0 && p.channel === undefined).length;
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
