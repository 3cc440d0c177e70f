// Two gyre nodes in each of the setups of lib/cluster.js (Redis; NATS with
// history in JetStream; redisnats; plain NATS with allow_wildcards): a
// centrifuge-js client connected to node A receives what the HTTP API of node
// B publishes, sees presence and join/leave of a client connected to node B
// and, where channels keep history, recovers on node A what node B published
// while it was away. On plain NATS, a pattern subscription on node A receives
// what node B publishes into the channels it matches.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { clusterSetups, setupSkip, startCluster } from '../lib/cluster.js';
import { recoversAfterDisconnect, subscribeWithLive } from '../lib/recovery.js';
import {
  builds, bobJoins, newClient, newSub, connected, subscribed, closeAll, uniqueChannel, spyingSocket, jsonPushes,
} from '../lib/sdk.js';
import { baseConfig } from '../lib/server.js';

// live is a namespace without history, the kind plain NATS serves.
const live = {
  name: 'live',
  presence: true,
  join_leave: true,
  force_push_join_leave: true,
  allow_subscribe_for_client: true,
  allow_presence_for_subscriber: true,
};

// clusterConfig is the shared test configuration with "live"; where the
// setup keeps no history, without the namespaces that have it.
function clusterConfig(setup) {
  return (port) => {
    const cfg = baseConfig(port);
    cfg.channel.namespaces.push(live);
    if (!setup.history) cfg.channel.namespaces = cfg.channel.namespaces.filter((ns) => !ns.history_size);
    return cfg;
  };
}

for (const setup of clusterSetups) {
  describe(`two nodes on ${setup.name}`, { skip: setupSkip(setup) }, () => {
    let cluster = null;
    const nodeA = () => cluster.a;
    const nodeB = () => cluster.b;
    // ns is where the scenarios that need no history run: with offsets where
    // the setup has them.
    const ns = setup.history ? 'chat' : 'live';

    before(async () => {
      cluster = await startCluster(setup, clusterConfig(setup));
    });

    after(async () => {
      if (cluster) await cluster.stop();
    });

    for (const build of builds) {
      describe(`${build.name} build`, () => {
        it('receives on node A what the API of node B publishes', async (t) => {
          const c = newClient(build, nodeA());
          t.after(() => closeAll([c]));
          await connected(c);
          const ch = uniqueChannel(`${ns}:cross-`);
          const sub = newSub(c, ch);
          await subscribed(sub);

          const sent = [];
          for (let i = 0; i < 5; i += 1) {
            const data = { i, text: `from B ${i}` };
            sent.push(data);
            const res = await nodeB().publish(ch, data);
            const want = setup.history ? i + 1 : undefined;
            assert.equal(res.offset, want, `publish result: ${JSON.stringify(res)}`);
          }
          const pubs = await sub.rec.waitCount('publication', sent.length);
          // centrifuge-js may reorder publications that arrive in separate
          // frames (see protocol.md), so compare as sets, with offsets.
          const got = pubs.map((p) => ({ offset: p.offset, data: build.decode(p.data) }));
          got.sort((x, y) => x.data.i - y.data.i);
          assert.deepEqual(got, sent.map((data, i) => ({ offset: setup.history ? i + 1 : undefined, data })));
        });

        it('sees presence and join/leave of a client on node B', async (t) => {
          const ch = uniqueChannel(`${ns}:room-`);
          const { aliceConn, bobConn, subA, subB, since, join } = await bobJoins(t, build, nodeA(), nodeB(), ch);
          assert.equal(join.info.client, bobConn.client);

          const presence = await subA.presence();
          assert.deepEqual(
            Object.keys(presence.clients ?? {}).sort(),
            [aliceConn.client, bobConn.client].sort(),
            `presence seen from node A: ${JSON.stringify(presence)}`,
          );

          subB.unsubscribe();
          const leave = await subA.rec.waitFor('leave', { since, match: (l) => l.info?.user === 'bob', what: 'leave of bob' });
          assert.equal(leave.info.client, bobConn.client);
        });

        if (setup.history) it('recovers on node A what node B published while the client was away', async (t) => {
          const c = newClient(build, nodeA());
          t.after(() => closeAll([c]));
          await connected(c);
          const state = await subscribeWithLive(nodeB(), c);
          await recoversAfterDisconnect(build, nodeB(), c, state);
        });

        if (setup.wildcards) it('delivers through a pattern on node A what node B publishes into matching channels', async (t) => {
          const frames = [];
          const c = newClient(build, nodeA(), { websocket: spyingSocket(frames) });
          t.after(() => closeAll([c]));
          await connected(c);
          const base = uniqueChannel('live:eu-');
          const pattern = `${base}.*`;
          const sub = newSub(c, pattern);
          await subscribed(sub);

          const matching = [`${base}.paris`, `${base}.rome`, `${base}.oslo`];
          const others = [`${base}.rome.bus`, `${base}x.paris`, uniqueChannel('live:us-')];
          // Those that do not match go first: were one delivered, it would
          // be there by the time the last matching one is.
          for (const ch of [...others, ...matching]) await nodeB().publish(ch, { at: ch });
          const pubs = await sub.rec.waitCount('publication', matching.length);
          for (const p of pubs) assert.equal(p.channel, pattern);
          assert.deepEqual(pubs.map((p) => build.decode(p.data).at).sort(), [...matching].sort());

          if (build.name === 'json') {
            // On the wire the push names the pattern, the publication the channel.
            const pushes = jsonPushes(frames).filter((p) => p.pub);
            assert.deepEqual(
              pushes.map((p) => [p.channel, p.pub.channel, p.pub.data.at, p.pub.offset]).sort(),
              matching.map((ch) => [pattern, ch, ch, undefined]).sort(),
              `publication pushes on the wire: ${JSON.stringify(pushes)}`,
            );
          }
        });
      });
    }
  });
}
